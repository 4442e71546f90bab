package jobs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

func TestDecodeEnvelopeReasons(t *testing.T) {
	t.Parallel()
	for body, reason := range map[string]string{
		``:                            contract.ReasonMalformed,
		`not json`:                    contract.ReasonMalformed,
		`[1]`:                         contract.ReasonMalformed,
		`{}`:                          contract.ReasonMalformed,
		`{"v":1,"id":"a"}`:            contract.ReasonMalformed, // no kind
		`{"v":1,"kind":"k"}`:          contract.ReasonMalformed, // no id
		`{"v":1,"id":"a","kind":"k"`:  contract.ReasonMalformed,
		`{"v":2,"id":"a","kind":"k"}`: contract.ReasonVersion,
		`{"v":7,"id":5}`:              contract.ReasonVersion, // a future shape
		`{"v":1,"id":"a","kind":"k","enqueued_at":"yesterday"}`: contract.ReasonMalformed,
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
	var h wire.Header
	args, ok := wire.DecodeHeader(body, &h, nil, nil)
	env := envelopeOf(&h)
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
		_, fast := wire.DecodeHeader(body, &wire.Header{}, nil, nil)
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
	plan := wire.CompileArgsPlan(reflect.TypeFor[ArgsFuzz]())
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

func TestDecodeArgsAbsent(t *testing.T) {
	t.Parallel()
	got := ArgsFuzz{S: "set"}
	require.NoError(t, decodeArgs(&JobRow{}, wire.CompileArgsPlan(reflect.TypeFor[ArgsFuzz]()), &got))
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
