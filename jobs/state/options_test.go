package state

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noDB is a DynamoDBAPI that is never called: New checks its options before any call.
type noDB struct{ DynamoDBAPI }

// A batch's counters are spread over 32 shards unless Options.Shards says otherwise, up to
// 1,000 (docs/state.md); more is refused before any call.
func TestShardsDefaultAndLimit(t *testing.T) {
	t.Parallel()
	table, err := New(noDB{}, "state", nil)
	require.NoError(t, err)
	assert.Equal(t, 32, table.o.Shards)
	table, err = New(noDB{}, "state", &Options{Shards: 1000})
	require.NoError(t, err)
	assert.Equal(t, 1000, table.o.Shards)
	_, err = New(noDB{}, "state", &Options{Shards: 1001})
	require.ErrorContains(t, err, "Shards 1001: want 1-1000")
	_, err = New(noDB{}, "state", &Options{Shards: -1})
	require.Error(t, err)
}
