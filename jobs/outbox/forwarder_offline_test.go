package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// The sample forwarder's real binary, run as Lambda runs it and fed by the local DynamoDB Streams
// event source mapping, is killed in the middle of its first batch: after it sent the batch's
// jobs and before it deleted their outbox items (the delete is slowed down, the process killed
// meanwhile). The batch is retried and sends again. No job is lost, every outbox item is deleted
// in the end, and the workers, behind idempotency, have each job's effect once.
func TestOutboxForwarderKilledMidBatchLosesNothingOnEmulator(t *testing.T) {
	t.Parallel()
	needsPromptStreams(t)
	f := newFixture(t)
	ctx := context.Background()
	const n = 20
	var ids []string
	for i := range n {
		order := "order-" + strconv.Itoa(i)
		got, err := f.outbox.Write(ctx, f.db, []ddbtypes.TransactWriteItem{f.order(order)}, outbox.Job{Args: SendReceipt{Order: order}})
		require.NoError(t, err)
		ids = append(ids, got...)
	}

	var deletes atomic.Int32
	proxy, err := faultproxy.Start(awstest.Endpoint(), &faultproxy.Options{Latency: func(api string) time.Duration {
		if api == "DynamoDB.BatchWriteItem" && deletes.Add(1) == 1 {
			return 3 * time.Second // the first batch's delete: the process is killed before it ends
		}
		return 0
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })

	bin := filepath.Join(t.TempDir(), "bootstrap")
	require.NoError(t, lambdaruntime.Build(ctx, filepath.Join("..", "..", "cmd", "jobkit-outbox"), bin))
	var invocations, killed atomic.Int32
	rt, err := lambdaruntime.New(lambdaruntime.Function{
		Name: "outbox-forwarder", Bootstrap: bin, Timeout: 30 * time.Second, MaxInstances: 1,
		Env: map[string]string{contract.EnvIdempotencyTable: f.state},
	}, &lambdaruntime.Options{
		Endpoint: proxy.URL(), Output: io.Discard,
		OnStart: func(_ string, pid int) {
			if invocations.Add(1) != 1 {
				return
			}
			go func() {
				for deletes.Load() == 0 { // the jobs are sent; the delete has begun
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(200 * time.Millisecond)
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed.Add(1)
				}
			}()
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })

	poller, err := esm.NewStreamPoller(dynamodbstreams.NewFromConfig(f.cfg), rt, esm.StreamMapping{
		StreamARN: f.streamARN, TrimHorizon: true, ReportBatchItemFailures: true, BatchSize: 10, PollInterval: 100 * time.Millisecond,
	}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = poller.Run(runCtx) }()
	// Done until every outbox item is deleted (the stream also carries the deletes' own records).
	left := func() int {
		k := 0
		for _, id := range ids {
			if f.outboxItem(t, id) {
				k++
			}
		}
		return k
	}
	for deadline := time.Now().Add(60 * time.Second); left() > 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	wg.Wait()
	st := poller.Stats()
	require.GreaterOrEqual(t, st.Done, int64(n), "the stream was read to its end: %+v", st)
	require.Equal(t, int32(1), killed.Load(), "the first invocation was killed mid-batch")
	assert.GreaterOrEqual(t, st.Retries, int64(1), "the killed batch was retried: %+v", st)
	assert.Zero(t, st.Skipped)
	for _, id := range ids {
		assert.False(t, f.outboxItem(t, id), "outbox item %s deleted", id)
	}

	msgs := awstest.Drain(t, f.sqs, f.queue.URL)
	sent := jobIDs(t, msgs)
	require.Len(t, sent, n, "no job lost")
	t.Logf("%d messages for %d jobs (%d invocations, %d killed)", len(msgs), n, invocations.Load(), killed.Load())

	effects := f.runBehindIdempotency(t, msgs)
	require.Len(t, effects, n)
	for order, k := range effects {
		assert.Equal(t, 1, k, "%s: one effect", order)
	}
}
