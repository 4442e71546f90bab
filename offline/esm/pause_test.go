package esm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A queue paused with Inspector.SetQueuePaused stops its offline mapping as a disabled mapping
// stops on AWS: the batch being invoked is settled, nothing is received while paused, and what
// was sent meanwhile is invoked after the resume.
func TestPausedQueueInvokesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60},
		mapping: esm.Mapping{BatchSize: 1, MaximumConcurrency: 2},
		options: esm.Options{PauseCheck: 100 * time.Millisecond, LongPoll: time.Second},
	})
	in := inspect.New(awstest.Config(t))
	ctx := context.Background()
	h.start()
	h.send("sleep:1500")
	require.Eventually(t, func() bool { return h.poller.Stats().Invocations == 1 }, 30*time.Second, 20*time.Millisecond)
	_, err := in.SetQueuePaused(ctx, h.q.URL, true)
	require.NoError(t, err)
	require.Eventually(t, h.poller.Paused, 10*time.Second, 20*time.Millisecond)
	time.Sleep(1200 * time.Millisecond) // a long poll already waiting when the pause was read ends

	h.send("ok", "ok")
	require.Equal(t, esm.AllSucceeded, h.nextReport().Verdict, "the batch invoked before the pause is settled")
	time.Sleep(2 * time.Second)
	require.Equal(t, int64(1), h.poller.Stats().Invocations, "nothing invoked while paused")
	visible, inFlight := h.counts()
	require.Equal(t, [2]int{2, 0}, [2]int{visible, inFlight}, "what was sent while paused waits, unreceived")

	_, err = in.SetQueuePaused(ctx, h.q.URL, false)
	require.NoError(t, err)
	h.nextReport()
	h.nextReport()
	require.False(t, h.poller.Paused())
	require.Equal(t, int64(3), h.poller.Stats().Invocations)
}
