package constructs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A ContainerWorker's metrics reach its CloudWatch agent: synthesized, deployed and run on the
// offline stack, the worker (testdata/lanework as a container's consumer) runs its jobs, and its
// EMF lines arrive at the agent's endpoint (the stack's stand-in for the sidecar, whose image
// does not run here) — each with the worker's log group, the queue and kind dimensions and the
// jobs it counted — rather than on its stdout, where on AWS the awslogs driver would leave them
// unread.
func TestContainerWorkerMetricsOnTheOfflineStack(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := context.Background()
	app := newApp(t)
	stack := awscdk.NewStack(app, jsii.String("Containers"), nil)
	table := NewIdempotencyTable(stack, "State", nil)
	queue := NewJobQueue(stack, "Long", &JobQueueProps{MaxAttempts: 3, VisibilityTimeout: time.Minute})
	NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{
		Source: GoSource{ModuleDir: "..", Package: "constructs/testdata/lanework"}, Queue: queue,
		IdempotencyTable: table, Kinds: []string{laneJob{}.Kind()}, MinTasks: 1,
	})
	asm := app.Synth(nil)

	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: *asm.Directory(), Prefix: awstest.Prefix("ctr"), BuildDir: t.TempDir(),
	})
	require.Len(t, d.Containers, 1, "the worker runs; its agent sidecar is skipped")
	out := &awstest.SyncBuffer{}
	running, err := devstack.Start(ctx, devstack.Config{AWS: cfg, Deployment: d, Output: out, Events: true, Metrics: true, NoScheduler: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = running.Stop() })

	url := d.Stacks[0].Outputs[contract.OutputQueuePrefix+"Long"]
	require.NotEmpty(t, url)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: url})
	require.NoError(t, err)
	const n = 5
	for i := range n {
		_, err := client.Enqueue(ctx, laneJob{N: i}, nil)
		require.NoError(t, err)
	}
	succeeded := func() (k int) {
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			if e, ok := event.Parse(sc.Bytes()); ok && e.Type == event.Succeeded {
				k++
			}
		}
		return k
	}
	require.Eventually(t, func() bool { return succeeded() == n }, 2*time.Minute, 100*time.Millisecond, "the container ran the jobs")
	require.Eventually(t, func() bool {
		return counted(t, out.Bytes())[contract.MetricSucceeded] == n
	}, 30*time.Second, 100*time.Millisecond, "the EMF lines counted every job")
	assert.Positive(t, running.EMFLines("Encoder"), "the lines went to the agent's endpoint")

	var line map[string]any
	for _, l := range emfLines(out.Bytes()) {
		line = l
	}
	aws := line["_aws"].(map[string]any)
	assert.NotEmpty(t, aws["LogGroupName"], "the agent writes it to the worker's log group")
	assert.Contains(t, line[contract.DimensionQueue], "Long", "the Queue dimension")
	assert.Equal(t, laneJob{}.Kind(), line[contract.DimensionKind])

	// The offline stack made them metrics in the emulator's CloudWatch, as CloudWatch does from
	// the agent's log events: the Inspector (the console, `jobkit queues`) reads them per minute,
	// for the queue and for its kind.
	queueName := line[contract.DimensionQueue].(string)
	in := inspect.New(cfg)
	var series []inspect.JobSeries
	require.Eventually(t, func() bool {
		if series, err = in.JobMetrics(ctx, []string{queueName}, time.Hour); err != nil {
			t.Logf("JobMetrics: %v", err)
			return false
		}
		return len(series) == 2 && sum(series[0].Succeeded) == n && sum(series[1].Succeeded) == n
	}, 30*time.Second, 500*time.Millisecond, "the queue's and the kind's jobs per minute: %+v", series)
	assert.Equal(t, laneJob{}.Kind(), series[1].Kind)
	assert.Len(t, series[0].Minutes, 60)
	assert.Zero(t, sum(series[0].Dead))
}

func sum(v []float64) (s int) {
	for _, x := range v {
		s += int(x)
	}
	return s
}

// emfLines returns the EMF lines of a stack's output (after their "[<name>] " prefix).
func emfLines(out []byte) []map[string]any {
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Bytes()
		i := bytes.Index(l, []byte(`{"_aws":`))
		if i < 0 {
			continue
		}
		var m map[string]any
		if json.Unmarshal(l[i:], &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

// counted sums each metric's count over the EMF lines of out.
func counted(t *testing.T, out []byte) map[string]int {
	t.Helper()
	sum := map[string]int{}
	for _, l := range emfLines(out) {
		for _, m := range []string{contract.MetricSucceeded, contract.MetricRetried, contract.MetricDead} {
			if v, ok := l[m].(float64); ok {
				sum[m] += int(v)
			}
		}
	}
	return sum
}
