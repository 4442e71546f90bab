package sdkfix_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/jobkit-go/jobkit/jobs/sdkfix"
	"github.com/stretchr/testify/require"
)

// answerFirst plays net/http's part in the race: it reads the body's declared length (the
// request is then on the wire and the server can answer), then the SDK closes the body (it does
// once Do returns), then the transport reads once more to check nothing follows the declared
// length, as transferWriter.writeBody does with io.Copy. It answers GetQueueUrl, with a 500
// first when failFirst is set.
type answerFirst struct {
	failFirst bool
	bodies    []string
	drainErrs []error
}

func (a *answerFirst) Do(req *http.Request) (*http.Response, error) {
	var sent bytes.Buffer
	if _, err := io.CopyN(&sent, req.Body, req.ContentLength); err != nil {
		return nil, err
	}
	req.Body.Close()
	_, drainErr := io.Copy(io.Discard, req.Body)
	a.bodies = append(a.bodies, sent.String())
	a.drainErrs = append(a.drainErrs, drainErr)
	status, body := 200, `{"QueueUrl":"http://127.0.0.1:4566/000000000000/q"}`
	if a.failFirst && len(a.bodies) == 1 {
		status, body = 500, `{"__type":"InternalError","message":"try again"}`
	}
	return &http.Response{
		StatusCode:    status,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

func client(doer *answerFirst, opts ...func(*middleware.Stack) error) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:4566"),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   doer,
		APIOptions:   opts,
	})
}

// Without the option the check read fails with io.EOF: net/http would close the connection
// under the response and the SDK would send the call again. If this test fails, the SDK no longer
// has the race and the option can go.
func TestSDKBodyAnswersWriteToWithEOFOnceClosed(t *testing.T) {
	doer := &answerFirst{}
	_, err := client(doer).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	require.NoError(t, err)
	require.Len(t, doer.drainErrs, 1)
	require.True(t, errors.Is(doer.drainErrs[0], io.EOF), "the check read after close: %v", doer.drainErrs[0])
}

func TestNoBodyWriteToEndsTheBodyCleanlyAfterClose(t *testing.T) {
	doer := &answerFirst{}
	out, err := client(doer, sdkfix.NoBodyWriteTo).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4566/000000000000/q", aws.ToString(out.QueueUrl))
	require.Equal(t, []error{nil}, doer.drainErrs)
	require.JSONEq(t, `{"QueueName":"q"}`, doer.bodies[0])
}

// A retried attempt sends the whole body again: the wrapper keeps the stream's rewind.
func TestNoBodyWriteToKeepsRetriesWhole(t *testing.T) {
	doer := &answerFirst{failFirst: true}
	_, err := client(doer, sdkfix.NoBodyWriteTo).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	require.NoError(t, err)
	require.Len(t, doer.bodies, 2)
	require.Equal(t, doer.bodies[0], doer.bodies[1])
	require.JSONEq(t, `{"QueueName":"q"}`, doer.bodies[1])
	require.Equal(t, []error{nil, nil}, doer.drainErrs)
}
