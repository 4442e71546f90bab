package jobs

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeEnvelopeReasons(t *testing.T) {
	t.Parallel()
	for body, reason := range map[string]string{
		``:                            ReasonMalformed,
		`not json`:                    ReasonMalformed,
		`[1]`:                         ReasonMalformed,
		`{}`:                          ReasonMalformed,
		`{"v":1,"id":"a"}`:            ReasonMalformed, // no kind
		`{"v":1,"kind":"k"}`:          ReasonMalformed, // no id
		`{"v":1,"id":"a","kind":"k"`:  ReasonMalformed,
		`{"v":2,"id":"a","kind":"k"}`: ReasonVersion,
		`{"v":7,"id":5}`:              ReasonVersion, // a future shape
		`{"v":1,"id":"a","kind":"k","enqueued_at":"yesterday"}`: ReasonMalformed,
	} {
		_, err := DecodeEnvelope(body)
		var ee *EnvelopeError
		require.True(t, errors.As(err, &ee), "%q: %v", body, err)
		assert.Equal(t, reason, ee.Reason, body)
		assert.Equal(t, reason, ee.DeadLetterReason(), body)
	}
}

func TestDecodeEnvelopeFastPathTakesOrdinaryEnvelopes(t *testing.T) {
	t.Parallel()
	body := `{"v":1,"id":"01JD0000000000000000000000","kind":"email.send","args":{"to":"a@b.c","n":[1,2,{"x":null}]},"enqueued_at":"2026-11-21T12:00:00.123Z","key":"k","trace":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	var env Envelope
	args, ok := decodeEnvelopeFast(body, &env, nil)
	require.True(t, ok, "an ordinary envelope takes the fast path")
	assert.Equal(t, `{"to":"a@b.c","n":[1,2,{"x":null}]}`, args)
	want, err := decodeEnvelopeReference(body)
	require.NoError(t, err)
	assert.Equal(t, want.ID, env.ID)
	assert.Equal(t, want.Kind, env.Kind)
	assert.Equal(t, want.Key, env.Key)
	assert.Equal(t, want.Trace, env.Trace)
	assert.Equal(t, string(want.Args), args)
	assert.True(t, want.EnqueuedAt.Equal(env.EnqueuedAt))
	assert.Equal(t, time.Date(2026, 11, 21, 12, 0, 0, 123e6, time.UTC), env.EnqueuedAt.UTC())

	// What the fast path leaves to encoding/json still decodes, to the same values.
	for _, body := range []string{
		`{"v":1,"id":"a\u00e9","kind":"k"}`,
		`{"V":1,"ID":"a","KIND":"k"}`,
		`{"v":1,"id":"a","kind":"k","args":null,"x":1e5}`,
	} {
		_, fast := decodeEnvelopeFast(body, &Envelope{}, nil)
		got, err := DecodeEnvelope(body)
		want, wantErr := decodeEnvelopeReference(body)
		require.NoError(t, wantErr, body)
		require.NoError(t, err, body)
		assert.Equal(t, want, got, "%s (fast path: %t)", body, fast)
	}
}

// ArgsFuzz covers every kind the args plan decodes, with tags of every sort.
type ArgsFuzz struct {
	S     string  `json:"s"`
	B     bool    `json:"b"`
	I     int     `json:"i"`
	I8    int8    `json:"i8"`
	I16   int16   `json:"i16,omitempty"`
	I32   int32   `json:"i32"`
	I64   int64   `json:"i64"`
	U     uint    `json:"u"`
	U8    uint8   `json:"u8"`
	U64   uint64  `json:"u64"`
	F32   float32 `json:"f32"`
	F64   float64 `json:"f64"`
	Plain string
	Skip  string `json:"-"`
	Dash  string `json:"-,"`
	//lint:ignore SA5008 an invalid tag name on purpose: encoding/json then uses the field name
	Bad   string `json:"bad\"tag"`
	named Named
}

type Named string

// Kind makes ArgsFuzz a job: the runtime's decoding is fuzzed with it too.
func (ArgsFuzz) Kind() string { return "fuzz.args" }

func TestArgsPlanCompiles(t *testing.T) {
	t.Parallel()
	p := compileArgsPlan(reflect.TypeFor[ArgsFuzz]())
	require.NotNil(t, p)
	var names []string
	for _, f := range p.fields {
		names = append(names, f.name)
	}
	assert.Equal(t, []string{"s", "b", "i", "i8", "i16", "i32", "i64", "u", "u8", "u64", "f32", "f64", "Plain", "-", "Bad"}, names)
	type nested struct{ A struct{ B int } }
	type embedded struct{ ArgsFuzz }
	type quoted struct {
		N int `json:"n,string"`
	}
	type timed struct{ T time.Time }
	type conflict struct {
		A string `json:"x"`
		B string `json:"X"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[nested](), reflect.TypeFor[embedded](), reflect.TypeFor[quoted](),
		reflect.TypeFor[timed](), reflect.TypeFor[conflict](), reflect.TypeFor[int](),
		reflect.TypeFor[RawArgs](), reflect.TypeFor[[]string](),
	} {
		assert.Nil(t, compileArgsPlan(typ), typ.String())
	}
}

// FuzzDecodeArgs checks the args plan against encoding/json: same success, same values.
func FuzzDecodeArgs(f *testing.F) {
	for _, seed := range []string{
		`{"s":"x","b":true,"i":-5,"i8":127,"i16":-32768,"i32":1,"i64":9223372036854775807,"u":1,"u8":255,"u64":18446744073709551615,"f32":1.5,"f64":-2.5e-3,"Plain":"p","-":"d","Bad":"b"}`,
		`{"s":null,"i":1.0}`, `{"i8":128}`, `{"S":"fold"}`, `{"plain":"fold"}`, `{"s":"a\nb"}`,
		`{"x":[1,{"y":"z"}],"s":"after"}`, `null`, `[]`, `{"s":1}`, `{"f32":1e39}`, `{"u":-1}`,
		`{"s":"a","s":"b"}`, ` { } `, `{"Skip":"x","named":"y"}`, "{\"s\":\"\xff\"}", `{"ſ":"long s"}`,
	} {
		f.Add([]byte(seed))
	}
	plan := compileArgsPlan(reflect.TypeFor[ArgsFuzz]())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return // no args at all decode to the zero value, by design (TestDecodeArgsAbsent)
		}
		var want ArgsFuzz
		wantErr := json.Unmarshal(data, &want)
		var got ArgsFuzz
		row := &JobRow{EncodedArgs: data}
		gotErr := decodeArgs(row, plan, &got)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", data, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
		// And through the runtime's path, where the args arrive validated from the body.
		if wantErr == nil && json.Valid(data) {
			var viaBody ArgsFuzz
			src := string(data)
			row := &JobRow{EncodedArgs: bytesOf(src), argsSrc: src}
			if err := decodeArgs(row, plan, &viaBody); err != nil || !reflect.DeepEqual(viaBody, want) {
				t.Fatalf("%q via body: %v %+v", data, err, viaBody)
			}
		}
	})
}

func TestArgsPlanFastPathTakesOrdinaryArgs(t *testing.T) {
	t.Parallel()
	plan := compileArgsPlan(reflect.TypeFor[ArgsFuzz]())
	var got ArgsFuzz
	src := `{"s":"héllo","b":true,"i":-5,"u64":7,"f64":2.5,"Plain":"p","other":{"deep":[1,2]}}`
	require.True(t, plan.decode(src, unsafePointer(&got)))
	assert.Equal(t, ArgsFuzz{S: "héllo", B: true, I: -5, U64: 7, F64: 2.5, Plain: "p"}, got)
	for _, src := range []string{`{"S":"x"}`, `{"s":"\n"}`, `{"i":1.5}`, `{"s":1}`, `{"s":"x"`, `{"s":"x"} 1`} {
		assert.False(t, plan.decode(src, unsafePointer(&ArgsFuzz{})), src)
	}
}

func TestULIDsAreOrderedAndWellFormed(t *testing.T) {
	t.Parallel()
	var g idGen
	now := time.UnixMilli(1_700_000_000_000)
	prev := ""
	for i := 0; i < 1000; i++ {
		id := g.next(now) // the same millisecond every time: the random part counts up
		require.Len(t, id, 26)
		require.Equal(t, "", strings.Trim(id, crockford), id)
		require.Greater(t, id, prev)
		prev = id
	}
	later := g.next(now.Add(time.Millisecond))
	assert.Greater(t, later, prev)
	assert.Equal(t, encodeULID(uint64(now.UnixMilli()), [10]byte{})[:10], prev[:10], "the time part")
	assert.Equal(t, "00000000000000000000000000", encodeULID(0, [10]byte{}))
	assert.Equal(t, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", encodeULID(1<<48-1, [10]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255}))
	assert.NotEqual(t, NewID(), NewID())
}

func unsafePointer(p *ArgsFuzz) unsafe.Pointer { return unsafe.Pointer(p) }

func TestDecodeArgsAbsent(t *testing.T) {
	t.Parallel()
	got := ArgsFuzz{S: "set"}
	require.NoError(t, decodeArgs(&JobRow{}, compileArgsPlan(reflect.TypeFor[ArgsFuzz]()), &got))
	assert.Equal(t, "set", got.S, "an envelope without args leaves the value alone (the zero T in a job)")
}

func TestAppendMillis(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0.000", 1500 * time.Microsecond: "1.500", 12345678 * time.Nanosecond: "12.345",
		2 * time.Hour: "7200000.000", 999: "0.000", -time.Second: "0.000", 7 * time.Microsecond: "0.007",
	} {
		assert.Equal(t, want, string(appendMillis(nil, d)), d.String())
	}
}

// skipPlain stops where a byte-by-byte scan does, for every byte value in every position of a
// run of ordinary bytes, and for random strings.
func TestSkipPlain(t *testing.T) {
	t.Parallel()
	special := func(c byte, nonASCII bool) bool {
		return c == '"' || c == '\\' || c < 0x20 || (nonASCII && c >= 0x80)
	}
	check := func(s string) {
		for _, nonASCII := range []bool{true, false} {
			want := 0
			for want < len(s) && !special(s[want], nonASCII) {
				want++
			}
			got := skipPlain(s, 0, nonASCII)
			require.LessOrEqual(t, got, want, "%q nonASCII=%t", s, nonASCII)
			require.True(t, got == want || len(s)-got < 8, "%q nonASCII=%t: stopped at %d, not %d", s, nonASCII, got, want)
		}
	}
	for pos := 0; pos < 20; pos++ {
		for c := 0; c < 256; c++ {
			w := []byte("abcdefghijklmnopqrstuvwxyz")
			w[pos] = byte(c)
			check(string(w))
			for k := range w { // and with high bytes and other specials after it
				if k > pos {
					w[k] = []byte{0xC3, '"', 0x01, 'a'}[k%4]
				} else if k < pos {
					w[k] = 0xC3
				}
			}
			check(string(w))
		}
	}
	seed := uint64(1)
	for n := 0; n < 100000; n++ {
		var w [24]byte
		for k := range w {
			seed = seed*6364136223846793005 + 1442695040888963407
			w[k] = byte(seed >> 56)
			if seed&3 != 0 {
				w[k] = 'a' + w[k]%26 // mostly ordinary bytes
			}
		}
		check(string(w[:]))
	}
}

// parseTimeUTC, with the date it remembers from one call to the next, agrees with
// time.Time.UnmarshalJSON or leaves the string to it.
func TestParseTimeUTC(t *testing.T) {
	t.Parallel()
	var dc dateCache
	fast := 0
	for _, s := range []string{
		"2026-11-21T12:00:00Z", "2026-11-21T12:00:01.5Z", "2026-11-21T23:59:59.999999999Z",
		"2026-11-21T24:00:00Z", "2026-11-21T12:60:00Z", "2026-11-21T12:00:60Z", "2026-11-21T12:00:00.Z",
		"2026-11-21T12:00:00.1234567891234Z", "2026-11-21T12:00:00+01:00", "2026-11-21T12:00:00z",
		"2026-11-22T00:00:00Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2000-02-29T10:00:00Z",
		"1900-02-29T10:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59.5Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "2026-04-30T00:00:00Z",
		"2026-1a-01T00:00:00Z", "2026-11-21T1a:00:00Z", "2026-11-21 12:00:00Z",
	} {
		var want time.Time
		wantErr := want.UnmarshalJSON([]byte(`"` + s + `"`))
		got, ok := parseTimeUTC(s, &dc)
		if !ok {
			continue // the standard parser decides
		}
		fast++
		require.NoError(t, wantErr, s)
		assert.Equal(t, want.String(), got.String(), s)
		assert.True(t, want.Equal(got), s)
	}
	assert.Greater(t, fast, 10, "the fast path takes the usual forms")
}

// exactFloat and smallDecimal give strconv's results whenever they take a number.
func TestNumberFastPaths(t *testing.T) {
	t.Parallel()
	nums := []string{"0", "-0", "1", "-1", "1.25", "0.1", "0.3", "123456789012345", "1234567890123456",
		"1e22", "1e23", "1.5e-22", "1e-23", "9007199254740993", "0.000001", "-0.0", "1E+2", "2.5e-3",
		"999999999999999", "999999999999999e22", "123456789012345678", "1234567890123456789", "00", "1.0"}
	seed := uint64(7)
	for n := 0; n < 20000; n++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		mant := strconv.FormatUint(seed>>(seed%64), 10)
		if p := int(seed>>8) % (len(mant) + 1); p > 0 && p < len(mant) {
			mant = mant[:p] + "." + mant[p:]
		}
		if seed&1 == 1 {
			mant = "-" + mant
		}
		if e := int(seed>>20)%60 - 30; seed&2 == 2 {
			mant += "e" + strconv.Itoa(e)
		}
		nums = append(nums, mant)
	}
	for _, s := range nums {
		if f, ok := exactFloat(s); ok {
			want, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err, s)
			require.Equal(t, math.Float64bits(want), math.Float64bits(f), s)
		}
		if n, ok := smallDecimal(s); ok {
			want, err := strconv.ParseInt(s, 10, 64)
			require.NoError(t, err, s)
			require.Equal(t, want, n, s)
		}
	}
	_, ok := exactFloat("1.25")
	assert.True(t, ok)
	_, ok = smallDecimal("100001")
	assert.True(t, ok)
}
