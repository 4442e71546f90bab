package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// upstream is a stand-in endpoint that answers every request with an empty JSON document and
// counts what reached it. The tests below are about what the SDK makes of the proxy's own
// answers, which never reach it.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// sdkConfig is a configuration for endpoint with the SDK's standard retryer, its backoff shortened
// so the test does not wait seconds.
func sdkConfig(endpoint string, maxAttempts int) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = 5 * time.Millisecond
			})
		},
	}
}

func start(t *testing.T, upstreamURL string, opts *faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(upstreamURL, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// The SDK reads the proxy's SQS and DynamoDB answers as throttling errors and retries them: every
// throttled request is retried until the SDK's attempts run out, and nothing reaches the endpoint.
func TestSDKRetriesThrottles(t *testing.T) {
	t.Parallel()
	up, reached := upstream(t)
	p := start(t, up.URL, &faultproxy.Options{ThrottleRate: 1})
	cfg := sdkConfig(p.URL(), 4)
	ctx := context.Background()
	isThrottle := retry.IsErrorThrottles(retry.DefaultThrottles)

	_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(up.URL + "/000000000000/q"), MessageBody: aws.String("x")})
	require.Error(t, err)
	var apiErr smithy.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, faultproxy.CodeSQSThrottle, apiErr.ErrorCode())
	require.Equal(t, smithy.FaultClient, apiErr.ErrorFault())
	require.Equal(t, aws.TrueTernary, isThrottle.IsErrorThrottle(err))
	require.Contains(t, err.Error(), "exceeded maximum number of attempts, 4")

	_, err = dynamodb.NewFromConfig(cfg).PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String("t"), Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "a"}},
	})
	require.Error(t, err)
	var pte *ddbtypes.ProvisionedThroughputExceededException
	require.True(t, errors.As(err, &pte), "a modelled DynamoDB error, not a checksum or decode failure: %v", err)
	require.Equal(t, aws.TrueTernary, isThrottle.IsErrorThrottle(err))

	st := p.Stats()
	require.Equal(t, faultproxy.APIStats{Requests: 4, Throttled: 4}, st.APIs["SQS.SendMessage"])
	require.Equal(t, faultproxy.APIStats{Requests: 4, Throttled: 4}, st.APIs["DynamoDB.PutItem"])
	require.Zero(t, reached.Load())
}

// At a partial rate, the calls succeed after retries; the proxy forwards each call exactly once
// and counts the throttled attempts apart.
func TestPartialRateForwardsEachCallOnce(t *testing.T) {
	t.Parallel()
	up, reached := upstream(t)
	p := start(t, up.URL, &faultproxy.Options{ThrottleRate: 0.3, Seed: 7})
	client := dynamodb.NewFromConfig(sdkConfig(p.URL(), 20))
	const calls = 200
	for i := range calls {
		_, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String("t"), ConsistentRead: aws.Bool(i%2 == 0),
			Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "a"}},
		})
		require.NoError(t, err)
	}
	st := p.Stats().APIs["DynamoDB.GetItem"]
	require.EqualValues(t, calls, st.Forwarded)
	require.EqualValues(t, calls, reached.Load())
	require.Equal(t, st.Requests, st.Forwarded+st.Throttled)
	// 30% of the attempts: with 200 calls, between 15% and 45% of them is far outside chance.
	require.InDelta(t, 0.3, float64(st.Throttled)/float64(st.Requests), 0.15)
	require.InDelta(t, 150.0, st.ReadUnits, 1e-9) // 100 consistent reads (1) + 100 eventual (0.5)

	p.SetThrottleRate(0)
	p.ResetStats()
	_, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "a"}},
	})
	require.NoError(t, err)
	require.Equal(t, faultproxy.APIStats{Requests: 1, Forwarded: 1, ReadUnits: 0.5}, p.Stats().APIs["DynamoDB.GetItem"])
}

// Exempt APIs are never throttled.
func TestExempt(t *testing.T) {
	t.Parallel()
	up, _ := upstream(t)
	p := start(t, up.URL, &faultproxy.Options{ThrottleRate: 1, Exempt: func(api string) bool { return strings.HasPrefix(api, "DynamoDB.") }})
	_, err := dynamodb.NewFromConfig(sdkConfig(p.URL(), 1)).DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "a"}},
	})
	require.NoError(t, err)
	require.Equal(t, faultproxy.APIStats{Requests: 1, Forwarded: 1, WriteUnits: 1}, p.Stats().APIs["DynamoDB.DeleteItem"])
}

func TestStartRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, err := faultproxy.Start("127.0.0.1:4566", nil)
	require.ErrorContains(t, err, "not an http(s) URL")
	_, err = faultproxy.Start("http://127.0.0.1:4566", &faultproxy.Options{ThrottleRate: 1.5})
	require.ErrorContains(t, err, "outside 0-1")
}
