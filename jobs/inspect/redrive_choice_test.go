package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// Which move Redrive makes, and what it refuses, is jobkit's decision: checked here on values.
// What SQS does with the moves is checked on the emulators (redrive_verify_test.go).
func TestChooseMethod(t *testing.T) {
	t.Parallel()
	std := QueueStats{Name: "email-dlq", URL: "https://sqs.us-east-1.amazonaws.com/123456789012/email-dlq"}
	fifo := QueueStats{Name: "ledger-dlq.fifo", URL: "https://sqs.us-east-1.amazonaws.com/123456789012/ledger-dlq.fifo", FIFO: true}
	fifoDest := "https://sqs.us-east-1.amazonaws.com/123456789012/ledger.fifo"
	for _, c := range []struct {
		name     string
		dlq      QueueStats
		o        RedriveOptions
		want     RedriveMethod
		fallback string // a part of FallbackReason
		err      error
	}{
		{name: "auto, standard", dlq: std, want: RedriveNative},
		{name: "auto, filter", dlq: std, o: RedriveOptions{Filter: Filter{Kind: "k"}}, want: RedriveManual, fallback: "filters"},
		{name: "auto, FIFO DLQ", dlq: fifo, want: RedriveManual, fallback: "deduplication id"},
		{name: "auto, FIFO destination", dlq: std, o: RedriveOptions{To: fifoDest}, want: RedriveManual, fallback: "deduplication id"},
		{name: "auto, FIFO source", dlq: std, o: RedriveOptions{Source: fifoDest}, want: RedriveManual, fallback: "deduplication id"},
		{name: "native, standard", dlq: std, o: RedriveOptions{Method: RedriveNative}, want: RedriveNative},
		{name: "native, FIFO DLQ", dlq: fifo, o: RedriveOptions{Method: RedriveNative}, err: ErrNativeFIFO},
		{name: "native, FIFO destination", dlq: std, o: RedriveOptions{Method: RedriveNative, To: fifoDest}, err: ErrNativeFIFO},
		{name: "manual, FIFO", dlq: fifo, o: RedriveOptions{Method: RedriveManual}, want: RedriveManual},
	} {
		res := &RedriveResult{}
		got, err := chooseMethod(c.dlq, &c.o, res)
		if c.err != nil {
			require.ErrorIs(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
		if c.fallback == "" {
			require.Empty(t, res.FallbackReason, c.name)
		} else {
			require.Contains(t, res.FallbackReason, c.fallback, c.name)
		}
	}
	_, err := chooseMethod(std, &RedriveOptions{Method: "teleport"}, &RedriveResult{})
	require.ErrorContains(t, err, "unknown redrive method")
}

// An explicit native move on a FIFO DLQ is refused before any move task starts.
func TestRedriveNativeRefusedOnFIFOStartsNothing(t *testing.T) {
	t.Parallel()
	fake := &fakeMoveSQS{statuses: []sqstypes.ListMessageMoveTasksResultEntry{{Status: aws.String("COMPLETED")}}}
	in := New(aws.Config{}, func(o *Options) { o.SQS = fake })
	_, err := in.Redrive(context.Background(), "https://sqs.us-east-1.amazonaws.com/123456789012/ledger-dlq.fifo", &RedriveOptions{
		Method: RedriveNative, PollInterval: time.Millisecond,
	})
	require.ErrorIs(t, err, ErrNativeFIFO)
	require.Nil(t, fake.started, "no StartMessageMoveTask")
}

func TestRemainingReason(t *testing.T) {
	t.Parallel()
	require.Empty(t, remainingReason(&RedriveResult{Method: RedriveNative}))
	require.Equal(t, nativeLeftReason, remainingReason(&RedriveResult{Method: RedriveNative, Remaining: 2}))
	// The manual move's counts explain what they count; the rest arrived or was held meanwhile.
	require.Empty(t, remainingReason(&RedriveResult{Method: RedriveManual, Remaining: 3, Skipped: 1, NoDestination: 1, LeftInFlight: 1}))
	require.Contains(t, remainingReason(&RedriveResult{Method: RedriveManual, Remaining: 3, Skipped: 1}), "2 dead-lettered while the redrive ran")
}
