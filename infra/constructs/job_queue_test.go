package constructs

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

func TestJobQueueStandard(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Email", nil)
	require.Equal(t, DefaultMaxAttempts+DefaultRedriveMargin, q.MaxReceiveCount)
	tpl := synth(t, stack)

	queues := tpl.Resources("AWS::SQS::Queue")
	require.Len(t, queues, 2)
	mainID, dlqID := queueIDs(t, tpl)
	main, dlq := props(queues[mainID]), props(queues[dlqID])

	// Redrive: the safety net fires only after MaxAttempts plus the margin.
	require.Equal(t, float64(8), get(main, "RedrivePolicy.maxReceiveCount"))
	require.Equal(t, getAtt(dlqID, "Arn"), get(main, "RedrivePolicy.deadLetterTargetArn"))
	require.Equal(t, float64(30), main["VisibilityTimeout"])
	require.Equal(t, float64(4*24*3600), main["MessageRetentionPeriod"])
	require.Equal(t, float64(14*24*3600), dlq["MessageRetentionPeriod"])
	for _, p := range []map[string]any{main, dlq} {
		require.Equal(t, true, p["SqsManagedSseEnabled"])
		require.NotContains(t, p, "QueueName", "no fixed resource names")
		require.NotContains(t, p, "FifoQueue")
	}

	// Enforce SSL: each queue has a policy denying every action without TLS.
	policies := tpl.Resources("AWS::SQS::QueuePolicy")
	require.Len(t, policies, 2)
	guarded := map[string]bool{}
	for _, body := range policies {
		st := get(body, "Properties.PolicyDocument.Statement.0").(map[string]any)
		require.Equal(t, "Deny", st["Effect"])
		require.Equal(t, "sqs:*", st["Action"])
		require.Equal(t, "false", get(st, "Condition.Bool.aws:SecureTransport"))
		require.Equal(t, map[string]any{"AWS": "*"}, st["Principal"])
		for _, q := range get(body, "Properties.Queues").([]any) {
			guarded[q.(map[string]any)["Ref"].(string)] = true
		}
	}
	require.Equal(t, map[string]bool{mainID: true, dlqID: true}, guarded)

	// Alarms: any message in the DLQ; the oldest job older than the threshold.
	alarms := tpl.Resources("AWS::CloudWatch::Alarm")
	require.Len(t, alarms, 2)
	byMetric := map[string]map[string]any{}
	for _, body := range alarms {
		byMetric[get(body, "Properties.MetricName").(string)] = props(body)
	}
	depth := byMetric["ApproximateNumberOfMessagesVisible"]
	require.NotNil(t, depth)
	require.Equal(t, "AWS/SQS", depth["Namespace"])
	require.Equal(t, float64(0), depth["Threshold"])
	require.Equal(t, "GreaterThanThreshold", depth["ComparisonOperator"])
	require.Equal(t, "notBreaching", depth["TreatMissingData"])
	require.Equal(t, getAtt(dlqID, "QueueName"), get(depth, "Dimensions.0.Value"))
	age := byMetric["ApproximateAgeOfOldestMessage"]
	require.NotNil(t, age)
	require.Equal(t, float64(3600), age["Threshold"])
	require.Equal(t, "GreaterThanThreshold", age["ComparisonOperator"])
	require.Equal(t, getAtt(mainID, "QueueName"), get(age, "Dimensions.0.Value"))

	// Outputs the CLI and the offline stack look up.
	outputs := tpl["Outputs"].(map[string]any)
	require.Equal(t, ref(mainID), get(outputs, "JobkitQueueEmail.Value"))
	require.Equal(t, ref(dlqID), get(outputs, "JobkitDlqEmail.Value"))

	requireNoWildcardGrant(t, tpl)
}

func TestJobQueueFIFO(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Ledger", &JobQueueProps{
		FIFO: true, MaxAttempts: 4, VisibilityTimeout: 2 * time.Minute,
		HighThroughputFIFO: true, ContentBasedDeduplication: true, AgeAlarmThreshold: 10 * time.Minute,
	})
	require.Equal(t, 53, q.MaxReceiveCount, "FIFO default: 10 records a batch × (4 attempts + 1) + 3")
	require.Equal(t, contract.MinFIFOMaxReceiveCount(MaxFIFOBatchSize, 4)+DefaultRedriveMargin-1, q.MaxReceiveCount)
	custom := NewJobQueue(stack, "Other", &JobQueueProps{FIFO: true, MaxAttempts: 3, RedriveMargin: 1})
	require.Equal(t, 4, custom.MaxReceiveCount)

	tpl := synth(t, stack)
	var seen int
	for _, body := range tpl.Resources("AWS::SQS::Queue") {
		p := props(body)
		require.Equal(t, true, p["FifoQueue"], "a FIFO queue needs a FIFO DLQ")
		require.Equal(t, true, p["SqsManagedSseEnabled"])
		rc := get(p, "RedrivePolicy.maxReceiveCount")
		switch {
		case rc == float64(53):
			seen++
			require.Equal(t, float64(120), p["VisibilityTimeout"])
			require.Equal(t, "messageGroup", p["DeduplicationScope"])
			require.Equal(t, "perMessageGroupId", p["FifoThroughputLimit"])
			// EventBridge Scheduler sends no deduplication id: the body's hash stands in for it.
			require.Equal(t, true, p["ContentBasedDeduplication"])
		case rc == float64(4):
			require.Equal(t, false, p["ContentBasedDeduplication"], "off unless asked for")
		default:
			// A DLQ never drops a dead job as a duplicate of an earlier one with the same body.
			require.Nil(t, rc)
			require.Equal(t, false, p["ContentBasedDeduplication"], "dead-letter queue")
		}
	}
	require.Equal(t, 1, seen)
	var ageThresholds []float64
	for _, body := range tpl.Resources("AWS::CloudWatch::Alarm") {
		if get(body, "Properties.MetricName") == "ApproximateAgeOfOldestMessage" {
			ageThresholds = append(ageThresholds, get(body, "Properties.Threshold").(float64))
		}
	}
	require.ElementsMatch(t, []float64{600, 3600}, ageThresholds)
	outputs := tpl["Outputs"].(map[string]any)
	for _, k := range []string{"JobkitQueueLedger", "JobkitDlqLedger", "JobkitQueueOther", "JobkitDlqOther"} {
		require.Contains(t, outputs, k)
	}
}

func TestJobQueueRejectsBadProps(t *testing.T) {
	cases := map[string]struct {
		id    string
		props JobQueueProps
		want  string
	}{
		"id":             {"bad-id", JobQueueProps{}, "alphanumeric"},
		"attempts":       {"Q", JobQueueProps{MaxAttempts: -1}, "MaxAttempts"},
		"redrive max":    {"Q", JobQueueProps{MaxAttempts: 999, RedriveMargin: 5}, "1000"},
		"visibility":     {"Q", JobQueueProps{VisibilityTimeout: 13 * time.Hour}, "VisibilityTimeout"},
		"fractional":     {"Q", JobQueueProps{VisibilityTimeout: 1500 * time.Millisecond}, "whole seconds"},
		"retention":      {"Q", JobQueueProps{RetentionPeriod: 15 * 24 * time.Hour}, "RetentionPeriod"},
		"fifo only":      {"Q", JobQueueProps{ContentBasedDeduplication: true}, "need FIFO"},
		"fifo only (ht)": {"Q", JobQueueProps{HighThroughputFIFO: true}, "need FIFO"},
	}
	_, stack := newStack(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := mustPanic(t, func() { NewJobQueue(stack, tc.id, &tc.props) })
			msg, _ := v.(string)
			require.True(t, strings.Contains(msg, tc.want), "panic %q should mention %q", msg, tc.want)
		})
	}
}
