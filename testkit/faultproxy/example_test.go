package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// Every request through the proxy is counted by API; here every one is throttled, so the SDK's
// retries run out and the caller sees the throttling error.
func Example() {
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer endpoint.Close()
	p, err := faultproxy.Start(endpoint.URL, &faultproxy.Options{ThrottleRate: 1})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	client := sqs.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(p.URL()), // or AWS_ENDPOINT_URL for a whole process
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = time.Millisecond })
		},
	})
	_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(endpoint.URL + "/000000000000/jobs"), MessageBody: aws.String("{}")})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.ErrorCode())
	}
	st := p.Stats()
	fmt.Println(st.APIs["SQS.SendMessage"].Requests, st.APIs["SQS.SendMessage"].Throttled)
	fmt.Println(st.Queues["jobs"].APIs["SQS.SendMessage"].Requests)
	// Output:
	// ThrottlingException
	// 3 3
	// 3
}
