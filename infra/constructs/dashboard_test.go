package constructs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/stretchr/testify/require"
)

func TestDashboard(t *testing.T) {
	_, stack := newStack(t)
	email := NewJobQueue(stack, "Email", nil)
	ledger := NewJobQueue(stack, "Ledger", &JobQueueProps{FIFO: true, VisibilityTimeout: time.Minute})
	w := NewWorker(stack, "EmailWorker", &WorkerProps{Queue: email, Source: helloSource})
	NewDashboard(stack, "Dashboard", &DashboardProps{Queues: []*JobQueue{email, ledger}, Workers: []*Worker{w}})
	tpl := synth(t, stack)
	_, body := tpl.Only(t, "AWS::CloudWatch::Dashboard")
	require.NotContains(t, props(body), "DashboardName", "no fixed resource names")

	// The body is a Fn::Join of literal JSON and queue-name tokens; flatten it to search it.
	raw, err := json.Marshal(get(body, "Properties.DashboardBody"))
	require.NoError(t, err)
	flat := string(raw)
	// The job queues themselves (the Email queue's holding queue has a redrive policy too).
	emailID := *stack.GetLogicalId(email.Queue.Node().DefaultChild().(awssqs.CfnQueue))
	ledgerID := *stack.GetLogicalId(ledger.Queue.Node().DefaultChild().(awssqs.CfnQueue))
	for _, name := range []string{MetricSucceeded, MetricRetried, MetricSnoozed, MetricDead, MetricDuration} {
		// Every runtime metric of both queues: namespace, name, dimension Queue = the queue name.
		require.Equal(t, 2, strings.Count(flat, `[\"`+MetricsNamespace+`\",\"`+name+`\",\"`+MetricsDimension+`\",\"`)/map[bool]int{true: 3, false: 1}[name == MetricDuration],
			"metric %s for each queue", name)
	}
	// The names the runtime emits, spelled out: a rename on either side must fail here.
	require.Contains(t, flat, `[\"Jobkit\",\"Succeeded\",\"Queue\",`)
	require.Contains(t, flat, `[\"Jobkit\",\"Dead\",\"Queue\",`)
	for _, id := range []string{emailID, ledgerID} {
		require.Contains(t, flat, `{"Fn::GetAtt":["`+id+`","QueueName"]}`)
	}
	for _, m := range []string{"ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible", "ApproximateAgeOfOldestMessage", "Invocations", "Errors", "Throttles"} {
		require.Contains(t, flat, m)
	}
	require.Contains(t, flat, `p99`)
	// Per kind: searches of the runtime's Kind dimension, two per queue (outcomes, p99 time).
	require.Equal(t, 4, strings.Count(flat, `SEARCH('{Jobkit,Kind,Queue} Queue=`), "jobs by kind for each queue")
	for _, id := range []string{emailID, ledgerID} {
		require.Regexp(t, `SEARCH\('\{Jobkit,Kind,Queue\} Queue=[^{]*\{"Fn::GetAtt":\["`+id+`","QueueName"\]\}[^(]*\(MetricName=\W*Succeeded\W* OR MetricName=\W*Retried\W* OR MetricName=\W*Dead\W*\)', 'Sum', 300\)`, flat)
		require.Regexp(t, `SEARCH\('\{Jobkit,Kind,Queue\} Queue=[^{]*\{"Fn::GetAtt":\["`+id+`","QueueName"\]\}[^(]*\(MetricName=\W*Duration\W*\)', 'p99', 300\)`, flat)
	}
}

func TestDashboardNeedsAQueue(t *testing.T) {
	_, stack := newStack(t)
	v := mustPanic(t, func() { NewDashboard(stack, "D", &DashboardProps{}) })
	require.Contains(t, toString(v), "at least one queue")
}
