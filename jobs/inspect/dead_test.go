package inspect

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// When a message entered the DLQ is known for the runtime's and the redrive recorder's dead
// letters (their own sends); a message SQS's RedrivePolicy moved into the DLQ itself keeps the
// SentTimestamp of its first send.
func TestParseDeadJobDeadLetteredAt(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	msg := func(sourceARN string, attrs map[string]sqstypes.MessageAttributeValue) sqstypes.Message {
		m := sqstypes.Message{
			MessageId: aws.String("m-1"), Body: aws.String(`{"v":1,"id":"j-1","kind":"k"}`),
			Attributes:        map[string]string{"SentTimestamp": "1795262400000"},
			MessageAttributes: attrs,
		}
		if sourceARN != "" {
			m.Attributes["DeadLetterQueueSourceArn"] = sourceARN
		}
		return m
	}
	reason := map[string]sqstypes.MessageAttributeValue{contract.AttrReason: {DataType: aws.String("String"), StringValue: aws.String(contract.ReasonCancelled)}}
	src := "arn:aws:sqs:us-east-1:123456789012:email"

	runtime := ParseDeadJob(msg("", reason))
	require.False(t, runtime.ByRedrivePolicy())
	require.Equal(t, sent, runtime.SentAt)
	require.Equal(t, sent, runtime.DeadLetteredAt)
	require.Equal(t, ReasonHint(contract.ReasonCancelled), runtime.Hint())

	// The redrive recorder sends what the RedrivePolicy moved into the holding queue: it says why
	// and when, as the runtime's dead letters do.
	recorded := ParseDeadJob(msg("", map[string]sqstypes.MessageAttributeValue{contract.AttrReason: {DataType: aws.String("String"), StringValue: aws.String(contract.ReasonRedrivePolicy)}}))
	require.False(t, recorded.ByRedrivePolicy())
	require.Equal(t, sent, recorded.DeadLetteredAt)
	require.Equal(t, ReasonHint(contract.ReasonRedrivePolicy), recorded.Hint())

	for name, j := range map[string]DeadJob{
		"no jobkit reason":         ParseDeadJob(msg("", nil)),
		"SQS names its source":     ParseDeadJob(msg(src, nil)),
		"earlier reason, SQS move": ParseDeadJob(msg(src, reason)), // natively redriven, then moved again
	} {
		require.True(t, j.ByRedrivePolicy(), name)
		require.Equal(t, sent, j.SentAt, name)
		require.True(t, j.DeadLetteredAt.IsZero(), "%s: the time of the move is unknown", name)
		require.Equal(t, ReasonHint(""), j.Hint(), name)
		require.Contains(t, j.Hint(), "maxReceiveCount", name)
	}
	require.Equal(t, src, ParseDeadJob(msg(src, nil)).DeadLetterSourceARN)
}

// Every reason the runtime writes has a hint.
func TestEveryReasonHasAHint(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"", contract.ReasonMalformed, contract.ReasonVersion, contract.ReasonUnknownKind, contract.ReasonBadArgs,
		contract.ReasonCancelled, contract.ReasonAttemptsUsed, contract.ReasonPayloadMismatch, contract.ReasonPayloadUnavailable,
		contract.ReasonNoOutcome, contract.ReasonReceiveLimit, contract.ReasonRedrivePolicy} {
		require.NotEmpty(t, ReasonHint(r), r)
	}
	require.Empty(t, ReasonHint("not-a-reason"))
}
