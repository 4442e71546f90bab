package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference is the envelope's JSON shape as encoding/json reads it (jobs.Envelope's tags).
type reference struct {
	V          int             `json:"v"`
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Args       json.RawMessage `json:"args"`
	EnqueuedAt time.Time       `json:"enqueued_at"`
	Key        string          `json:"key,omitempty"`
	Trace      string          `json:"trace,omitempty"`
}

func TestDecodeHeaderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"v":1,"id":"01J","kind":"email.send","args":{"to":"a@b.c","n":[1,2,{"x":null}]},"enqueued_at":"2026-11-21T12:00:00.123Z","key":"k","trace":"t"}`,
		` { "v" : 1 , "id" : "a" , "kind" : "b" , "args" : null } `,
		`{"v":1,"id":"a","kind":"b","other":[true,false,"s\u00e9",-1.5e3,{}],"args":[]}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21T12:00:00+02:00"}`,
		`{}`,
	} {
		var h Header
		args, ok := DecodeHeader(body, &h, nil, nil)
		require.True(t, ok, body)
		var want reference
		require.NoError(t, json.Unmarshal([]byte(body), &want), body)
		assert.Equal(t, string(want.Args), args, body)
		assert.Equal(t, Header{V: want.V, ID: want.ID, Kind: want.Kind, EnqueuedAt: want.EnqueuedAt, Key: want.Key, Trace: want.Trace}, h, body)
	}
	// What it leaves to encoding/json: escapes, near-miss keys, non-ASCII keys, other numbers,
	// and everything invalid.
	for _, body := range []string{
		`{"v":1,"id":"a\u00e9","kind":"k"}`, `{"V":1}`, `{"ıd":"a"}`, `{"v":1.0}`, `{"v":01}`,
		`{"v":1,"id":"a"`, `{"v":1} x`, `[]`, ``, `{"args":{"a":}}`, `{"x":` + strings.Repeat("[", 66) + strings.Repeat("]", 66) + `}`,
	} {
		_, ok := DecodeHeader(body, &Header{}, nil, nil)
		assert.False(t, ok, body)
	}
}

// The args function sees every "args" member with the kind read so far; what it does not decode,
// DecodeHeader skips.
func TestDecodeHeaderArgsFunc(t *testing.T) {
	t.Parallel()
	type call struct{ kind, value string }
	var calls []call
	onArgs := func(kind, s string, i int) (int, bool) {
		end, ok := skipValue(s, i)
		calls = append(calls, call{kind, s[i:end]})
		return end, ok && kind == "b"
	}
	var dc DateCache
	var h Header
	args, ok := DecodeHeader(`{"args":1,"v":1,"kind":"b","args":{"x":2},"id":"a","enqueued_at":"2026-11-21T12:00:00Z"}`, &h, &dc, onArgs)
	require.True(t, ok)
	assert.Equal(t, `{"x":2}`, args, "the last args win")
	assert.Equal(t, []call{{"", "1"}, {"b", `{"x":2}`}}, calls)
	assert.Equal(t, "2026-11-21", dc.date, "the date is remembered")
	assert.Equal(t, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), h.EnqueuedAt)
}

// skipValue accepts what json.Valid accepts, nested as deep as its stack, and ends where the
// value ends.
func TestSkipValue(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		`0`, `-1.5e+3`, `"a\"b\u00e9"`, `true`, `false`, `null`, `[]`, `{}`, ` [ 1 , { "a" : [ ] } ] `,
		`{"a":{"b":[1,[2,[3]]],"c":"d"},"e":null}`, strings.Repeat("[", 64) + strings.Repeat("]", 64),
		`[1,]`, `{"a"}`, `{"a":1,}`, `[1 2]`, `tru`, `nul`, `"\x"`, `1.`, `-`, `{"a":1]`, `[`, ``,
	} {
		end, ok := skipValue(v+" ,", 0)
		assert.Equal(t, json.Valid([]byte(v)), ok, v)
		if ok {
			assert.Equal(t, len(strings.TrimRight(v, " ")), end, v)
		}
	}
	_, ok := skipValue(strings.Repeat("[", 66)+strings.Repeat("]", 66), 0)
	assert.False(t, ok, "deeper than the stack: left to encoding/json")
}
