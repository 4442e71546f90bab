package jobs

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeEnvelope checks DecodeEnvelope against plain encoding/json on any input: the same
// acceptance, the same reason when it refuses, the same values when it accepts, and no panic.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"v":1,"id":"01J","kind":"email.send","args":{"to":"a@b.c"},"enqueued_at":"2026-11-21T12:00:00Z"}`,
		`{"v":1,"id":"x","kind":"k","args":[1,2.5e3,-0,true,false,null,"s\u00e9\n",{"a":{}}],"key":"k1","trace":"00-abc-def-01"}`,
		` { "v" : 1 , "id" : "a" , "kind" : "b" , "args" : null } `,
		`{"v":2,"id":"a","kind":"b"}`,
		`{"V":1,"ID":"a","Kind":"b"}`,
		`{"v":1,"id":"a\"b","kind":"é","args":"\ud800"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21T12:00:00.123+02:00","x":[{"y":[]}]}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"not a time"}`,
		`{"v":1.0,"id":"a","kind":"b"}`,
		`{"v":"1","id":"a","kind":"b"}`,
		`{"v":1,"id":"a","kind":"b"} x`,
		`{"v":1,"id":"a","id":"c","kind":"b","args":1,"args":2}`,
		`[]`, `null`, `{}`, ``, `{"v":01}`, "{\"v\":1,\"id\":\"\xff\",\"kind\":\"b\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := DecodeEnvelope(string(body))
		want, wantErr := decodeEnvelopeReference(string(body))
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: DecodeEnvelope error %v, encoding/json error %v", body, gotErr, wantErr)
		}
		if gotErr != nil {
			var g, w *EnvelopeError
			if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) {
				t.Fatalf("%q: errors are not *EnvelopeError: %T, %T", body, gotErr, wantErr)
			}
			if g.Reason != w.Reason {
				t.Fatalf("%q: reason %q, encoding/json gives %q", body, g.Reason, w.Reason)
			}
			return
		}
		if got.V != want.V || got.ID != want.ID || got.Kind != want.Kind || got.Key != want.Key ||
			got.Trace != want.Trace || !bytes.Equal(got.Args, want.Args) ||
			!got.EnqueuedAt.Equal(want.EnqueuedAt) || got.EnqueuedAt.String() != want.EnqueuedAt.String() {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}
