package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// destinationARN returns the ARN of the queue a native move sends to, or "" to let SQS use each
// message's original source.
func (i *Inspector) destinationARN(ctx context.Context, o *RedriveOptions) (string, error) {
	u := o.To
	u = cmp.Or(u, o.Source)
	if u == "" {
		return "", nil
	}
	s, err := i.Depth(ctx, u)
	if err != nil {
		return "", err
	}
	return s.ARN, nil
}

func (i *Inspector) redriveNative(ctx context.Context, dlq QueueStats, o *RedriveOptions, res *RedriveResult) error {
	dest, err := i.destinationARN(ctx, o)
	if err != nil {
		return err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)}
	if dest != "" {
		in.DestinationArn = aws.String(dest)
	}
	if o.MaxPerSecond > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(o.MaxPerSecond)
	}
	// No retries: an endpoint without the action answers 5xx, and retrying that only wastes time.
	out, err := i.sqs.StartMessageMoveTask(ctx, in, func(so *sqs.Options) { so.RetryMaxAttempts = 1 })
	if err != nil {
		if unsupported(err) {
			return fmt.Errorf("%w (%s)", ErrNativeUnsupported, shortError(err))
		}
		return fmt.Errorf("inspect: start message move task: %w", err)
	}
	res.TaskHandle = aws.ToString(out.TaskHandle)
	t := time.NewTicker(o.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("inspect: stopped following move task %s (it goes on in SQS): %w", res.TaskHandle, ctx.Err())
		case <-t.C:
		}
		ls, err := i.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN), MaxResults: aws.Int32(1)})
		if err != nil {
			return fmt.Errorf("inspect: list message move tasks: %w", err)
		}
		if len(ls.Results) == 0 {
			continue
		}
		r := ls.Results[0] // the most recent task of this source
		if h := aws.ToString(r.TaskHandle); h != "" && h != res.TaskHandle {
			continue
		}
		res.Moved = r.ApproximateNumberOfMessagesMoved
		if r.ApproximateNumberOfMessagesToMove != nil {
			res.Total = *r.ApproximateNumberOfMessagesToMove
		}
		if o.Progress != nil {
			o.Progress(RedriveProgress{Method: RedriveNative, Total: res.Total, Moved: res.Moved})
		}
		switch status := aws.ToString(r.Status); status {
		case "COMPLETED":
			return nil
		case "FAILED", "CANCELLED":
			return fmt.Errorf("inspect: move task %s %s: %s", res.TaskHandle, strings.ToLower(status), aws.ToString(r.FailureReason))
		}
	}
}

// unsupported reports whether err says the endpoint does not implement the action (rather than
// refusing this call): an "unsupported/unknown action" error code, 404/405/501, or a 5xx whose body
// is not an AWS error document at all.
func unsupported(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAction",
			"UnknownOperation", "UnknownOperationException", "NotImplemented", "NotImplementedException":
			return true
		}
		return false
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch c := re.HTTPStatusCode(); {
		case c == 404, c == 405, c == 501:
			return true
		case c >= 500:
			return true // not an AWS error document: not an SQS implementation of the action
		}
	}
	return false
}

// shortError renders an AWS error in a few words: the error code and message, or the HTTP status
// when the answer was not an AWS error document.
func shortError(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return "HTTP " + strconv.Itoa(re.HTTPStatusCode())
	}
	return err.Error()
}
