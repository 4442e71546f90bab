package esm_test

import (
	"context"
	"fmt"
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
	awstest.EachQueueType(t, testPausedQueue)
}

func testPausedQueue(t *testing.T, fifo bool) {
	h := newHarness(t, setup{
		queue:   &awstest.QueueOptions{VisibilityTimeout: 60, FIFO: fifo},
		mapping: esm.Mapping{BatchSize: 1, MaximumConcurrency: 2},
		options: esm.Options{PauseCheck: 100 * time.Millisecond, LongPoll: time.Second},
	})
	send := func(bodies ...string) {
		if !fifo {
			h.send(bodies...)
			return
		}
		for i, b := range bodies {
			h.sendFIFO(fmt.Sprintf("g%d-%d", i, time.Now().UnixNano()), b)
		}
	}
	in := inspect.New(awstest.Config(t))
	ctx := context.Background()
	h.start()
	send("sleep:1500")
	require.Eventually(t, func() bool { return h.poller.Stats().Invocations == 1 }, 30*time.Second, 20*time.Millisecond)
	_, err := in.SetQueuePaused(ctx, h.q.URL, true)
	require.NoError(t, err)
	require.Eventually(t, h.poller.Paused, 10*time.Second, 20*time.Millisecond)
	time.Sleep(1200 * time.Millisecond) // a long poll already waiting when the pause was read ends

	send("ok", "ok-2")
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
