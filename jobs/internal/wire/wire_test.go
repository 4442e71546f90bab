package wire

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allKinds covers every kind the args plan decodes, with tags of every sort.
type allKinds struct {
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
	named string
}

// rawJSON has a field of a kind the plan leaves to encoding/json (a slice).
type rawJSON struct {
	KindName string
	JSON     json.RawMessage
}

func TestArgsPlanCompiles(t *testing.T) {
	t.Parallel()
	p := CompileArgsPlan(reflect.TypeFor[allKinds]())
	require.NotNil(t, p)
	var names []string
	for _, f := range p.fields {
		names = append(names, f.name)
	}
	assert.Equal(t, []string{"s", "b", "i", "i8", "i16", "i32", "i64", "u", "u8", "u64", "f32", "f64", "Plain", "-", "Bad"}, names)
	type nested struct{ A struct{ B int } }
	type embedded struct{ allKinds }
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
		reflect.TypeFor[rawJSON](), reflect.TypeFor[[]string](),
	} {
		assert.Nil(t, CompileArgsPlan(typ), typ.String())
	}
}

func TestArgsPlanFastPathTakesOrdinaryArgs(t *testing.T) {
	t.Parallel()
	plan := CompileArgsPlan(reflect.TypeFor[allKinds]())
	var got allKinds
	src := `{"s":"héllo","b":true,"i":-5,"u64":7,"f64":2.5,"Plain":"p","other":{"deep":[1,2]}}`
	require.True(t, plan.Decode(src, unsafePointer(&got)))
	assert.Equal(t, allKinds{S: "héllo", B: true, I: -5, U64: 7, F64: 2.5, Plain: "p"}, got)
	for _, src := range []string{`{"S":"x"}`, `{"s":"\n"}`, `{"i":1.5}`, `{"s":1}`, `{"s":"x"`, `{"s":"x"} 1`} {
		assert.False(t, plan.Decode(src, unsafePointer(&allKinds{})), src)
	}
}

func unsafePointer(p *allKinds) unsafe.Pointer { return unsafe.Pointer(p) }

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
	var dc DateCache
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

// exactFloat and SmallDecimal give strconv's results whenever they take a number.
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
		if n, ok := SmallDecimal(s); ok {
			want, err := strconv.ParseInt(s, 10, 64)
			require.NoError(t, err, s)
			require.Equal(t, want, n, s)
		}
	}
	_, ok := exactFloat("1.25")
	assert.True(t, ok)
	_, ok = SmallDecimal("100001")
	assert.True(t, ok)
}
