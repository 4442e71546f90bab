package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// queue is an SQS queue a check created.
type queue struct{ url, arn string }

// queueSpec shapes a check's queue.
type queueSpec struct {
	fifo            bool
	dlq             *queue
	maxReceiveCount int
	attrs           map[string]string
}

// createQueue creates a queue for the check and deletes it when the check ends.
func createQueue(ctx context.Context, env *Env, part string, spec queueSpec) (queue, error) {
	name := env.Name(part)
	attrs := map[string]string{}
	for k, v := range spec.attrs {
		attrs[k] = v
	}
	if spec.fifo {
		name += ".fifo"
		attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
	}
	if spec.dlq != nil {
		attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = fmt.Sprintf(
			`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, spec.dlq.arn, spec.maxReceiveCount)
	}
	out, err := env.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return queue{}, fmt.Errorf("create queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	env.Defer(func(ctx context.Context) {
		_, _ = env.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	got, err := env.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return queue{}, fmt.Errorf("queue arn %s: %w", name, err)
	}
	return queue{url: url, arn: got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]}, nil
}

// send sends bodies in order, in FIFO group group when it is not "".
func send(ctx context.Context, env *Env, q queue, group string, bodies ...string) error {
	for _, b := range bodies {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(b)}
		if group != "" {
			in.MessageGroupId = aws.String(group)
			in.MessageDeduplicationId = aws.String(b)
		}
		if _, err := env.SQS.SendMessage(ctx, in); err != nil {
			return fmt.Errorf("send %q: %w", b, err)
		}
	}
	return nil
}

// receive makes one ReceiveMessage call for up to max messages with every system attribute,
// waiting up to wait seconds.
func receive(ctx context.Context, env *Env, q queue, max, wait int32) ([]sqstypes.Message, error) {
	out, err := env.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.url),
		MaxNumberOfMessages:         max,
		WaitTimeSeconds:             wait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	return out.Messages, nil
}

// queueWith creates a queue of spec and sends bodies to it (in group, on a FIFO queue).
func queueWith(ctx context.Context, env *Env, spec queueSpec, group string, bodies ...string) (queue, error) {
	q, err := createQueue(ctx, env, "q", spec)
	if err != nil {
		return q, err
	}
	return q, send(ctx, env, q, group, bodies...)
}

// fifoInFlight sends bodies to group g of a new FIFO queue and receives up to max of them, which
// must be the first ones in order.
func fifoInFlight(ctx context.Context, env *Env, max int32, bodies ...string) (queue, []sqstypes.Message, error) {
	q, err := queueWith(ctx, env, queueSpec{fifo: true}, "g", bodies...)
	if err != nil {
		return q, nil, err
	}
	ms, err := receiveWant(ctx, env, q, max, "first receive", bodies[:min(int(max), len(bodies))]...)
	return q, ms, err
}

// receiveWant makes one receive for up to max messages (waiting 1 s) and requires exactly want,
// in order; what names the receive in the error.
func receiveWant(ctx context.Context, env *Env, q queue, max int32, what string, want ...string) ([]sqstypes.Message, error) {
	ms, err := receive(ctx, env, q, max, 1)
	if err != nil {
		return nil, err
	}
	return ms, wantBodies(what, ms, want...)
}

// wantBodies requires the messages' bodies to be want, in order.
func wantBodies(what string, ms []sqstypes.Message, want ...string) error {
	if got := bodies(ms); !slices.Equal(got, want) {
		return fmt.Errorf("%s: %v, want %v", what, got, want)
	}
	return nil
}

// withDLQ creates a queue of spec whose redrive policy moves a message to a new dead-letter queue
// after maxReceiveCount receives, and sends bodies to it (in group, on a FIFO queue).
func withDLQ(ctx context.Context, env *Env, spec queueSpec, maxReceiveCount int, group string, bodies ...string) (q, dlq queue, err error) {
	if dlq, err = createQueue(ctx, env, "dlq", spec); err != nil {
		return q, dlq, err
	}
	spec.dlq, spec.maxReceiveCount = &dlq, maxReceiveCount
	if q, err = createQueue(ctx, env, "q", spec); err != nil {
		return q, dlq, err
	}
	return q, dlq, send(ctx, env, q, group, bodies...)
}

// receiveAndRelease receives n messages of q (up to 10) and makes them visible again at once;
// fewer is an error.
func receiveAndRelease(ctx context.Context, env *Env, q queue, n int32) ([]sqstypes.Message, error) {
	ms, err := receive(ctx, env, q, n, 1)
	if err != nil {
		return nil, err
	}
	if len(ms) != int(n) {
		return nil, fmt.Errorf("received %d messages, want %d", len(ms), n)
	}
	return ms, release(ctx, env, q, ms...)
}

// receiveAll receives until it holds n messages or a receive comes back empty.
func receiveAll(ctx context.Context, env *Env, q queue, n int) ([]sqstypes.Message, error) {
	var got []sqstypes.Message
	for len(got) < n {
		ms, err := receive(ctx, env, q, 10, 1)
		if err != nil {
			return got, err
		}
		if len(ms) == 0 {
			break
		}
		got = append(got, ms...)
	}
	return got, nil
}

// release makes the messages visible again at once, as a failed attempt does.
func release(ctx context.Context, env *Env, q queue, ms ...sqstypes.Message) error {
	for _, m := range ms {
		if err := changeVisibility(ctx, env, q, m.ReceiptHandle, 0); err != nil {
			return fmt.Errorf("release %q: %w", aws.ToString(m.Body), err)
		}
	}
	return nil
}

func changeVisibility(ctx context.Context, env *Env, q queue, handle *string, seconds int32) error {
	_, err := env.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: handle, VisibilityTimeout: seconds,
	})
	return err
}

func deleteMessage(ctx context.Context, env *Env, q queue, m sqstypes.Message) error {
	_, err := env.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		return fmt.Errorf("delete %q: %w", aws.ToString(m.Body), err)
	}
	return nil
}

func bodies(ms []sqstypes.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

// errorCode returns the API error code of err ("" when it is not an API error), without the
// "AWS.SimpleQueueService." prefix of SQS's query-compatible codes or a JSON error type's
// "com.amazonaws.sqs#" namespace.
func errorCode(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	c := strings.TrimPrefix(ae.ErrorCode(), "AWS.SimpleQueueService.")
	if i := strings.LastIndexByte(c, '#'); i >= 0 {
		c = c[i+1:]
	}
	return c
}

// wantError returns nil when err is an API error with one of the codes (and notes which), else an
// error saying what the call did instead.
func (e *Env) wantError(call string, err error, codes ...string) error {
	if err == nil {
		return fmt.Errorf("%s succeeded; want an error (%s)", call, strings.Join(codes, " or "))
	}
	if c := errorCode(err); slices.Contains(codes, c) {
		e.Note(call + ": " + c)
		return nil
	}
	return fmt.Errorf("%s failed with %v; want %s", call, err, strings.Join(codes, " or "))
}

func attrInt(m sqstypes.Message, name string) (int, error) {
	v, ok := m.Attributes[name]
	if !ok {
		return 0, fmt.Errorf("message %q has no %s attribute", aws.ToString(m.Body), name)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("message %q: %s=%q is not a number", aws.ToString(m.Body), name, v)
	}
	return n, nil
}
