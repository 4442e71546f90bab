package devapp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A queue no event source mapping reads is consumed by a container: its running count is what the
// queue holds in flight, never more than the queue holds.
func TestQueueCountsWithoutMappingUseInFlight(t *testing.T) {
	t.Parallel()
	email := &Queue{Name: "Email", URL: "https://sqs/Email"}
	transcode := &Queue{Name: "Transcode", URL: "https://sqs/Transcode"}
	tr := &Tracker{queues: []*Queue{email, transcode}}
	st := &censusState{depths: []queueDepth{{main: 4, inFlight: 0, dlq: 1}, {main: 3, inFlight: 2, dlq: 0}}}

	per := tr.queueCounts(st, false)
	require.Equal(t, Counts{Pending: 3, Running: 2}, *per[transcode])
	require.Equal(t, Counts{Pending: 4, Running: 0, Dead: 1}, *per[email])
}
