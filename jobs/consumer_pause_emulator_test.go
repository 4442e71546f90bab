package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A paused queue (Inspector.SetQueuePaused) starts nothing: the consumer receives nothing while
// it is paused — not even once the job that held its only slot ends —, that job finishes and is
// deleted, and the jobs sent meanwhile wait in the queue, unreceived, to run once each after the
// resume.
func TestConsumerHonoursAPausedQueueOnSQS(t *testing.T) {
	awstest.EachQueueType(t, testConsumerPaused)
}

func testConsumerPaused(t *testing.T, fifo bool) {
	ctx := context.Background()
	cfg, client := awstest.SQS(t)
	q, dlq := awstest.QueueWithDLQ(t, cfg, "q", &awstest.QueueOptions{FIFO: fifo})
	job := func(n int) TestJob {
		if fifo {
			return TestJob{N: n, Group: fmt.Sprintf("g%d", n)}
		}
		return TestJob{N: n}
	}
	in := inspect.New(cfg)

	var mu sync.Mutex
	runs := map[int]int{}
	started := make(chan int, 10)
	release := make(chan struct{})
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[TestJob](func(ctx context.Context, job *jobs.Job[TestJob]) error {
		mu.Lock()
		runs[job.Args.N]++
		mu.Unlock()
		started <- job.Args.N
		if job.Args.N == 1 {
			<-release
		}
		return nil
	}))
	c, err := jobs.NewConsumer(w, runtimeConfig(client, q.URL, dlq.URL),
		// One slot: while job 1 runs, the poller waits for room, and the pause comes meanwhile.
		&jobs.ConsumerOptions{Concurrency: 1, WaitTime: time.Second, PauseCheck: 100 * time.Millisecond})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	enqueue(t, client, q.URL, job(1))
	require.Equal(t, 1, <-started)
	_, err = in.SetQueuePaused(ctx, q.URL, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Stats().Paused }, 10*time.Second, 50*time.Millisecond)
	time.Sleep(1200 * time.Millisecond) // a receive already waiting when the pause was read ends

	enqueue(t, client, q.URL, job(2), job(3))
	close(release)
	require.Eventually(t, func() bool { return c.Stats().Deleted == 1 }, 10*time.Second, 50*time.Millisecond,
		"the job running when the queue was paused finishes and is deleted")
	received := c.Stats().Received
	time.Sleep(2 * time.Second)
	assert.Equal(t, received, c.Stats().Received, "nothing received while paused")
	visible, inFlight := awstest.Counts(t, client, q.URL)
	assert.Equal(t, 2, visible, "the jobs sent while paused wait in the queue")
	assert.Equal(t, 0, inFlight)
	select {
	case n := <-started:
		t.Fatalf("job %d started while the queue was paused", n)
	default:
	}

	_, err = in.SetQueuePaused(ctx, q.URL, false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Stats().Deleted == 3 }, 15*time.Second, 50*time.Millisecond)
	assert.False(t, c.Stats().Paused)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[int]int{1: 1, 2: 1, 3: 1}, runs, "each job ran once")
}
