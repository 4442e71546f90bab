package esm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/esm"
)

func TestEventFilter(t *testing.T) {
	t.Parallel()
	outbox := `{"eventName":["INSERT"],"dynamodb":{"Keys":{"id":{"S":[{"prefix":"outbox#"}]}}}}`
	record := func(event, id string) []byte {
		return []byte(`{"eventName":"` + event + `","dynamodb":{"Keys":{"id":{"S":"` + id + `"}},"NewImage":{"n":{"N":"5"},"tags":{"SS":["a","b"]}}}}`)
	}
	for _, tc := range []struct {
		name     string
		patterns []string
		record   []byte
		want     bool
	}{
		{"no pattern", nil, record("MODIFY", "x"), true},
		{"outbox insert", []string{outbox}, record("INSERT", "outbox#01J"), true},
		{"outbox delete", []string{outbox}, record("REMOVE", "outbox#01J"), false},
		{"other insert", []string{outbox}, record("INSERT", "job#01J"), false},
		{"any pattern", []string{outbox, `{"eventName":["REMOVE"]}`}, record("REMOVE", "job#1"), true},
		{"number as string", []string{`{"dynamodb":{"NewImage":{"n":{"N":["5"]}}}}`}, record("INSERT", "x"), true},
		{"list value", []string{`{"dynamodb":{"NewImage":{"tags":{"SS":["b"]}}}}`}, record("INSERT", "x"), true},
		{"exists", []string{`{"dynamodb":{"NewImage":{"n":{"N":[{"exists":true}]}}}}`}, record("INSERT", "x"), true},
		{"not exists", []string{`{"dynamodb":{"NewImage":{"m":[{"exists":false}]}}}`}, record("INSERT", "x"), true},
		{"exists fails", []string{`{"dynamodb":{"NewImage":{"m":[{"exists":true}]}}}`}, record("INSERT", "x"), false},
		{"anything-but", []string{`{"eventName":[{"anything-but":["REMOVE"]}]}`}, record("INSERT", "x"), true},
		{"anything-but fails", []string{`{"eventName":[{"anything-but":"INSERT"}]}`}, record("INSERT", "x"), false},
		{"suffix", []string{`{"dynamodb":{"Keys":{"id":{"S":[{"suffix":"#9"}]}}}}`}, record("INSERT", "a#9"), true},
		{"missing object", []string{`{"dynamodb":{"OldImage":{"n":{"N":["5"]}}}}`}, record("INSERT", "x"), false},
	} {
		f, err := esm.NewEventFilter(tc.patterns)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, f.Match(tc.record), tc.name)
	}
}

func TestEventFilterRefusesWhatItCannotEvaluate(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`not json`, `{"a":"b"}`, `{"a":[{"numeric":[">",0]}]}`, `{"a":[{"prefix":"x","suffix":"y"}]}`, `{"a":[{"wildcard":"*"}]}`} {
		_, err := esm.NewEventFilter([]string{p})
		var ce *esm.ConfigError
		assert.ErrorAs(t, err, &ce, p)
	}
}
