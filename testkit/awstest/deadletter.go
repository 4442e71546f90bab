package awstest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DeadLetterByPolicy has SQS move n messages of src to its dead-letter queue dlq by src's
// RedrivePolicy, as a crash loop would: it receives src's messages and never deletes them, so
// each comes back when its visibility timeout lapses, until SQS moves it instead of delivering it
// once more. Create src with a small MaxReceiveCount (1) and VisibilityTimeout (1) for speed. It
// fails the test unless dlq holds n messages (visible or in flight) within a minute.
func DeadLetterByPolicy(tb testing.TB, cfg aws.Config, src, dlq Queue, n int) {
	tb.Helper()
	ctx := context.Background()
	client := sqs.NewFromConfig(cfg)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(src.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			tb.Fatalf("awstest: receive from %s: %v", src.Name, err)
		}
		if Depth(tb, client, dlq) >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("awstest: %s holds %d of the %d messages %s's RedrivePolicy should have moved there", dlq.Name, Depth(tb, client, dlq), n, src.Name)
		}
		time.Sleep(time.Second) // let the visibility timeout of what was received lapse
	}
}

// Depth returns a queue's visible, in-flight and delayed messages, as SQS approximates them.
func Depth(tb testing.TB, client *sqs.Client, q Queue) int {
	tb.Helper()
	v, f, d := depths(tb, client, q.URL)
	return v + f + d
}

// Counts returns a queue's visible and in-flight messages, as SQS approximates them.
func Counts(tb testing.TB, client *sqs.Client, url string) (visible, inFlight int) {
	tb.Helper()
	visible, inFlight, _ = depths(tb, client, url)
	return visible, inFlight
}

// depths returns a queue's visible, in-flight and delayed messages.
func depths(tb testing.TB, client *sqs.Client, url string) (visible, inFlight, delayed int) {
	tb.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		tb.Fatalf("awstest: attributes of %s: %v", url, err)
	}
	count := func(name sqstypes.QueueAttributeName, required bool) int {
		v, ok := out.Attributes[string(name)]
		if !ok && !required {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("awstest: %s of %s is %q, not a count", name, url, v)
		}
		return n
	}
	return count(sqstypes.QueueAttributeNameApproximateNumberOfMessages, true),
		count(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, true),
		count(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed, false)
}
