package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// TestMain runs this test binary as a benchmark's Lambda function when the offline Lambda
// runtime starts it so (benchFunctionEnv), as main does for the bench program.
func TestMain(m *testing.M) {
	if fn := os.Getenv(benchFunctionEnv); fn != "" {
		benchFunctions[fn]()
		return
	}
	os.Exit(m.Run())
}

// A flood of bulk jobs does not take the critical lane's capacity: each lane is a queue with an
// event source mapping and execution environments of its own (as the PriorityQueue construct
// deploys them), so with 200 bulk jobs of a second each still draining from the bulk lane —
// at least 10 s of work for its 2 environments — every critical job enqueued after the flood has
// run while most of the flood still waits. Were the lanes one queue, the critical jobs would wait
// behind it.
func TestCriticalLaneKeepsItsCapacityUnderABulkFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, client := awstest.SQS(t)
	out := newLaneOutput()
	lanes, stop, err := startLanes(ctx, map[string]*sqs.Client{"critical": client, "bulk": client},
		map[string]string{"critical": awstest.Endpoint(), "bulk": awstest.Endpoint()}, out)
	require.NoError(t, err)
	t.Cleanup(stop)
	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: lanes["critical"], Lanes: map[string]map[string]string{lanes["critical"]: lanes}})
	require.NoError(t, err)

	const bulk, critical = 200, 10
	flood := make([]jobs.BatchJob, bulk)
	for i := range flood {
		flood[i] = jobs.BatchJob{Args: laneJob{Lane: "bulk", N: i, Work: time.Second}, Opts: &jobs.EnqueueOpts{Priority: "bulk"}}
	}
	_, err = producer.EnqueueBatch(ctx, flood)
	require.NoError(t, err)
	require.NoError(t, waitFor(func() bool { return out.count("bulk", 0, bulk) > 0 }, time.Minute), "the bulk lane is busy")
	for i := range critical {
		_, err := producer.Enqueue(ctx, laneJob{Lane: "critical", N: i}, &jobs.EnqueueOpts{Priority: "critical"})
		require.NoError(t, err)
	}
	require.NoError(t, waitFor(func() bool { return out.count("critical", 0, critical) == critical }, 2*time.Minute), "every critical job runs")
	ranBulk := out.count("bulk", 0, bulk)
	// Behind the flood on one queue, a critical job would start after ~190 bulk jobs; here the
	// bulk lane starts 20 (two batches of 10) a second.
	require.Less(t, ranBulk, bulk/2, "the critical jobs ran while the bulk lane still had most of its backlog")
	t.Logf("bulk jobs started by the time the %d critical jobs had run: %d of %d", critical, ranBulk, bulk)
}
