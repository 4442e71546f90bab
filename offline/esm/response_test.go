package esm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/esm"
)

func TestParseBatchResponse(t *testing.T) {
	t.Parallel()
	batch := map[string]bool{"m1": true, "m2": true}
	cases := []struct {
		name, payload string
		failed        []string
		invalid       bool
	}{
		{"empty response", "", nil, false},
		{"blank response", " \n", nil, false},
		{"null response", "null", nil, false},
		{"empty object", "{}", nil, false},
		{"null list", `{"batchItemFailures":null}`, nil, false},
		{"empty list", `{"batchItemFailures":[]}`, nil, false},
		{"other keys only", `{"processed":2}`, nil, false},
		{"listed", `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`, []string{"m2"}, false},
		{"listed twice", `{"batchItemFailures":[{"itemIdentifier":"m2"},{"itemIdentifier":"m1"},{"itemIdentifier":"m2"}]}`, []string{"m2", "m1"}, false},
		{"unknown id", `{"batchItemFailures":[{"itemIdentifier":"m3"}]}`, nil, true},
		{"unknown among known", `{"batchItemFailures":[{"itemIdentifier":"m1"},{"itemIdentifier":"zz"}]}`, nil, true},
		{"empty id", `{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, true},
		{"null id", `{"batchItemFailures":[{"itemIdentifier":null}]}`, nil, true},
		{"bad key", `{"batchItemFailures":[{"itemId":"m1"}]}`, nil, true},
		{"key in other case", `{"batchItemFailures":[{"ItemIdentifier":"m1"}]}`, nil, true},
		{"numeric id", `{"batchItemFailures":[{"itemIdentifier":1}]}`, nil, true},
		{"null entry", `{"batchItemFailures":[null]}`, nil, true},
		{"list not a list", `{"batchItemFailures":"m1"}`, nil, true},
		{"invalid json", `{"batchItemFailures":[`, nil, true},
		{"a string", `"OK"`, nil, true},
		{"a list", `[{"itemIdentifier":"m1"}]`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			failed, err := esm.ParseBatchResponse([]byte(tc.payload), batch)
			if tc.invalid {
				var inv *esm.InvalidResponseError
				require.ErrorAs(t, err, &inv)
				require.Nil(t, failed)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.failed, failed)
		})
	}
}
