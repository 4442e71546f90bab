package jobs

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// SQSAPI is the part of the SQS API this package calls: the producer Client sends messages, the
// runtime changes visibility (backoff, snooze, heartbeat) and sends to the dead-letter queue.
// *sqs.Client implements it.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// MaxMessageSize is the largest SQS message, body and attributes together: 1 MiB.
const MaxMessageSize = 1 << 20

// MaxBatchEntries is the most entries one SQS batch call takes.
const MaxBatchEntries = 10

// IsFIFOQueue reports whether a queue URL (or ARN) names a FIFO queue: its name ends in ".fifo".
func IsFIFOQueue(queueURLOrARN string) bool { return strings.HasSuffix(queueURLOrARN, ".fifo") }

// QueueName returns the queue name in a queue URL or ARN: the part after the last '/' or ':'.
func QueueName(queueURLOrARN string) string { return awsarn.QueueName(queueURLOrARN) }
