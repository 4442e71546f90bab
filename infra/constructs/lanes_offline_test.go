package constructs

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// laneJob is testdata/lanework's LaneJob: it takes WorkMS milliseconds.
type laneJob struct {
	Lane   string `json:"lane"`
	N      int    `json:"n"`
	WorkMS int    `json:"work_ms,omitempty"`
}

func (laneJob) Kind() string { return "lanes.work" }

// A flood of bulk jobs leaves the critical lane its capacity, through the constructs a user
// deploys: a PriorityQueue of three lanes sharing 6 concurrent invocations (2 each), a Worker per
// lane with the lane's MaxConcurrency and batches of one, run by the offline stack from the
// synthesized assembly. 40 bulk jobs of a second each are 20 s of work for the bulk lane's 2
// environments; the 6 critical jobs enqueued once the flood has started all run while most of
// the flood still waits. Were the lanes one queue, each critical job would wait behind the flood.
// The bulk lane never runs more than its 2 jobs at once (its mapping's MaximumConcurrency).
func TestPriorityLanesOnTheOfflineStack(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := context.Background()

	app := newApp(t)
	stack := awscdk.NewStack(app, jsii.String("Lanes"), nil)
	table := NewIdempotencyTable(stack, "State", nil)
	pq := NewPriorityQueue(stack, "Work", &PriorityQueueProps{
		Lanes:            []Lane{{Name: "default", Weight: 1}, {Name: "critical", Weight: 1}, {Name: "bulk", Weight: 1}},
		TotalConcurrency: 6, Queue: JobQueueProps{MaxAttempts: 3, VisibilityTimeout: time.Minute},
	})
	source := GoSource{ModuleDir: "..", Package: "constructs/testdata/lanework"}
	for _, l := range pq.Lanes {
		require.Equal(t, 2, l.MaxConcurrency, "lane %s's share", l.Name)
		NewWorker(stack, contract.LaneQueueName("Work", l.Name), &WorkerProps{
			Source: source, Queue: l.Queue, IdempotencyTable: table, Kinds: []string{laneJob{}.Kind()},
			BatchSize: 1, MaxConcurrency: l.MaxConcurrency,
		})
	}
	asm := app.Synth(nil)

	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: *asm.Directory(), Prefix: awstest.Prefix("lanes"), BuildDir: t.TempDir(),
	})
	out := &awstest.SyncBuffer{}
	running, err := devstack.Start(ctx, devstack.Config{AWS: cfg, Deployment: d, Output: out, Events: true, NoScheduler: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = running.Stop() })

	lanes := map[string]string{}
	for _, l := range pq.Lanes {
		lanes[l.Name] = d.Stacks[0].Outputs[contract.OutputQueuePrefix+contract.LaneQueueName("Work", l.Name)]
		require.NotEmpty(t, lanes[l.Name], "the stack's output for lane %s", l.Name)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{
		DefaultQueueURL: lanes["default"], Lanes: map[string]map[string]string{lanes["default"]: lanes},
	})
	require.NoError(t, err)

	const bulk, critical = 40, 6
	flood := make([]jobs.BatchJob, bulk)
	for i := range flood {
		flood[i] = jobs.BatchJob{Args: laneJob{Lane: "bulk", N: i, WorkMS: 1000}, Opts: &jobs.EnqueueOpts{Priority: "bulk"}}
	}
	lane := map[string]string{} // job id → lane
	results, err := client.EnqueueBatch(ctx, flood)
	require.NoError(t, err)
	for _, r := range results {
		require.NoError(t, r.Err)
		require.Equal(t, lanes["bulk"], r.QueueURL, "routed to the bulk lane")
		lane[r.ID] = "bulk"
	}
	require.Eventually(t, func() bool { return laneEvents(out, lane).started["bulk"] > 0 }, time.Minute, 100*time.Millisecond, "the bulk lane is busy")
	for i := range critical {
		r, err := client.Enqueue(ctx, laneJob{Lane: "critical", N: i}, &jobs.EnqueueOpts{Priority: "critical"})
		require.NoError(t, err)
		require.Equal(t, lanes["critical"], r.QueueURL, "routed to the critical lane")
		lane[r.ID] = "critical"
	}
	var when laneCounts
	require.Eventually(t, func() bool {
		when = laneEvents(out, lane)
		return when.succeeded["critical"] == critical
	}, 2*time.Minute, 100*time.Millisecond, "every critical job runs")
	t.Logf("bulk jobs succeeded when the %d critical jobs had run: %d of %d", critical, when.succeeded["bulk"], bulk)
	require.Less(t, when.succeeded["bulk"], bulk/2, "the critical jobs ran while the bulk lane still had most of its flood")

	require.Eventually(t, func() bool { return laneEvents(out, lane).succeeded["bulk"] == bulk }, 2*time.Minute, 200*time.Millisecond, "the flood drains")
	final := laneEvents(out, lane)
	t.Logf("bulk jobs running at once, at most: %d", final.mostAtOnce["bulk"])
	require.LessOrEqual(t, final.mostAtOnce["bulk"], 2, "the bulk lane ran at most its MaximumConcurrency at once")
	require.Equal(t, bulk, final.started["bulk"], "each bulk job ran once")
}

type laneCounts struct {
	started, succeeded, mostAtOnce map[string]int
}

// laneEvents counts the runtime's events in the functions' output by lane (lane: job id → lane):
// jobs started, succeeded, and the most of a lane's jobs running at once.
func laneEvents(out *awstest.SyncBuffer, lane map[string]string) laneCounts {
	c := laneCounts{started: map[string]int{}, succeeded: map[string]int{}, mostAtOnce: map[string]int{}}
	running := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		e, ok := event.Parse(sc.Bytes())
		l := lane[e.JobID]
		if !ok || l == "" {
			continue
		}
		switch e.Type {
		case event.Started:
			c.started[l]++
			running[l]++
			c.mostAtOnce[l] = max(c.mostAtOnce[l], running[l])
		case event.Succeeded, event.Retried, event.Dead, event.Returned:
			running[l]--
			if e.Type == event.Succeeded {
				c.succeeded[l]++
			}
		}
	}
	return c
}
