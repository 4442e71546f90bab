package inspect

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"
)

// moto has no StartMessageMoveTask (LocalStack has; the emulator tests use it there), so the
// native path's own logic (which destination it asks for, following the task to its end,
// reporting progress and failure) is checked here with a small fake on every endpoint. It checks
// jobkit's code, not SQS's behaviour.
type fakeMoveSQS struct {
	SQSAPI
	started  *sqs.StartMessageMoveTaskInput
	statuses []sqstypes.ListMessageMoveTasksResultEntry
	polls    int
}

func (f *fakeMoveSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	name := aws.ToString(in.QueueUrl)[strings.LastIndex(aws.ToString(in.QueueUrl), "/")+1:]
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"QueueArn":                              "arn:aws:sqs:us-east-1:123456789012:" + name,
		"ApproximateNumberOfMessages":           "7",
		"ApproximateNumberOfMessagesNotVisible": "0",
	}}, nil
}

func (f *fakeMoveSQS) ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: []string{"https://sqs.us-east-1.amazonaws.com/123456789012/email"}}, nil
}

func (f *fakeMoveSQS) StartMessageMoveTask(_ context.Context, in *sqs.StartMessageMoveTaskInput, _ ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	f.started = in
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String("task-1")}, nil
}

func (f *fakeMoveSQS) ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	r := f.statuses[min(f.polls, len(f.statuses)-1)]
	f.polls++
	return &sqs.ListMessageMoveTasksOutput{Results: []sqstypes.ListMessageMoveTasksResultEntry{r}}, nil
}

func TestRedriveNativeFollowsTheTask(t *testing.T) {
	t.Parallel()
	fake := &fakeMoveSQS{statuses: []sqstypes.ListMessageMoveTasksResultEntry{
		{Status: aws.String("RUNNING"), TaskHandle: aws.String("task-1"), ApproximateNumberOfMessagesMoved: 3, ApproximateNumberOfMessagesToMove: aws.Int64(7)},
		{Status: aws.String("COMPLETED"), ApproximateNumberOfMessagesMoved: 7, ApproximateNumberOfMessagesToMove: aws.Int64(7)},
	}}
	in := New(aws.Config{}, func(o *Options) { o.SQS = fake })
	var seen []int64
	res, err := in.Redrive(context.Background(), "https://sqs.us-east-1.amazonaws.com/123456789012/email-dlq", &RedriveOptions{
		PollInterval: time.Millisecond, MaxPerSecond: 50,
		Progress: func(p RedriveProgress) { seen = append(seen, p.Moved) },
	})
	require.NoError(t, err)
	require.Equal(t, RedriveNative, res.Method)
	require.Equal(t, "task-1", res.TaskHandle)
	require.Equal(t, int64(7), res.Moved)
	require.Equal(t, []int64{3, 7}, seen)
	require.Equal(t, "arn:aws:sqs:us-east-1:123456789012:email-dlq", aws.ToString(fake.started.SourceArn))
	// The destination is the DLQ's one source queue, named explicitly.
	require.Equal(t, "arn:aws:sqs:us-east-1:123456789012:email", aws.ToString(fake.started.DestinationArn))
	require.Equal(t, int32(50), aws.ToInt32(fake.started.MaxNumberOfMessagesPerSecond))
	// Once the task completes, the DLQ's depth is read (the fake says 7 are there) and explained.
	require.Equal(t, int64(7), res.Remaining)
	require.Equal(t, nativeLeftReason, res.RemainingReason)
}

func TestRedriveNativeReportsAFailedTask(t *testing.T) {
	t.Parallel()
	fake := &fakeMoveSQS{statuses: []sqstypes.ListMessageMoveTasksResultEntry{
		{Status: aws.String("FAILED"), ApproximateNumberOfMessagesMoved: 2, FailureReason: aws.String("AWS.SimpleQueueService.NonExistentQueue")},
	}}
	in := New(aws.Config{}, func(o *Options) { o.SQS = fake })
	res, err := in.Redrive(context.Background(), "https://sqs.us-east-1.amazonaws.com/123456789012/email-dlq", &RedriveOptions{
		PollInterval: time.Millisecond, To: "https://sqs.us-east-1.amazonaws.com/123456789012/other",
	})
	require.ErrorContains(t, err, "NonExistentQueue")
	require.Equal(t, int64(2), res.Moved)
	require.Equal(t, "arn:aws:sqs:us-east-1:123456789012:other", aws.ToString(fake.started.DestinationArn))
}

func TestUnsupportedClassifiesEndpointAnswers(t *testing.T) {
	t.Parallel()
	respErr := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("deserialization failed")}
	}
	require.True(t, unsupported(respErr(500)), "an HTML error page, not an AWS error")
	require.True(t, unsupported(respErr(404)))
	require.True(t, unsupported(respErr(501)))
	require.True(t, unsupported(&smithy.GenericAPIError{Code: "UnsupportedOperation"}))
	require.True(t, unsupported(&smithy.GenericAPIError{Code: "InvalidAction"}))
	require.False(t, unsupported(&smithy.GenericAPIError{Code: "AccessDenied"}))
	require.False(t, unsupported(respErr(403)))
	require.False(t, unsupported(errors.New("dial tcp: connection refused")))
}
