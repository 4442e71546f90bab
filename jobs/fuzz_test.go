package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
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
		`{"v":1,"id":"a","kind":"b","args":{"s":"x","i":-3,"u8":7,"f64":1.5e2,"b":true,"S":1},"enqueued_at":"2024-02-29T23:59:59.123456789123Z"}`,
		`{"v":1,"id":"a","kind":"b","args":{"s":"x"},"kind":"c","args":{"i":1}}`,
		`{"v":1,"id":"a","args":{"s":"x"},"kind":"b"}`,
		`{"v":1,"id":"a","kind":"b","args":{"i":1.5}}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2023-02-29T00:00:00Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"0000-01-01T00:00:00Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"9999-12-31T23:59:59.9Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21T12:00:00.Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21T24:00:00Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21T12:00:60Z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"2026-11-21t12:00:00z"}`,
		`{"v":1,"id":"a","kind":"b","enqueued_at":"1969-12-31T23:59:59.999999999Z"}`,
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

		// The runtime's path: the args are not copied, and are decoded in the same pass into a
		// job of the kind (here every kind has ArgsFuzz's worker).
		pd := preDecoder{lookup: func(string) *registered { return fuzzArgsRegistration }, left: 1}
		var env Envelope
		args, err := decodeEnvelope(string(body), &env, &pd)
		if err != nil {
			t.Fatalf("%q: the runtime's decode fails (%v), DecodeEnvelope does not", body, err)
		}
		if env.ID != want.ID || env.Kind != want.Kind || env.Key != want.Key || env.Trace != want.Trace ||
			env.EnqueuedAt.String() != want.EnqueuedAt.String() || args != string(want.Args) {
			t.Fatalf("%q: the runtime's decode gives %+v, args %q", body, env, args)
		}
		// Again with what the first pass remembered (the date of enqueued_at): the same result.
		pd.reset()
		var again Envelope
		if args2, err := decodeEnvelope(string(body), &again, &pd); err != nil || args2 != args ||
			again.EnqueuedAt.String() != env.EnqueuedAt.String() {
			t.Fatalf("%q: a second pass gives %+v, args %q, %v", body, again, args2, err)
		}
		if pd.ready {
			var wantArgs ArgsFuzz
			if err := json.Unmarshal(want.Args, &wantArgs); err != nil {
				t.Fatalf("%q: args decoded in the pass, encoding/json refuses them: %v", body, err)
			}
			if got := (*Job[ArgsFuzz])(pd.job).Args; !reflect.DeepEqual(got, wantArgs) {
				t.Fatalf("%q: args decoded in the pass:\n got %+v\nwant %+v", body, got, wantArgs)
			}
		}
	})
}

// fuzzArgsRegistration is ArgsFuzz's worker, as the runtime finds it.
var fuzzArgsRegistration = func() *registered {
	w := NewWorkers()
	AddWorker(w, WorkFunc[ArgsFuzz](func(context.Context, *Job[ArgsFuzz]) error { return nil }))
	return w.lookup(ArgsFuzz{}.Kind())
}()
