package esm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// ParseBatchResponse reads a function's partial batch response the way Lambda does.
func ExampleParseBatchResponse() {
	batch := map[string]bool{"m1": true, "m2": true}
	failed, err := esm.ParseBatchResponse([]byte(`{"batchItemFailures":[{"itemIdentifier":"m2"}]}`), batch)
	fmt.Println(failed, err)
	failed, err = esm.ParseBatchResponse([]byte(`{"batchItemFailures":[]}`), batch)
	fmt.Println(failed, err)
	_, err = esm.ParseBatchResponse([]byte(`{"batchItemFailures":[{"itemIdentifier":""}]}`), batch)
	fmt.Println(err)
	// Output:
	// [m2] <nil>
	// [] <nil>
	// esm: invalid batch response: batchItemFailures[0].itemIdentifier is empty
}

// A function's bootstrap fed by its queue, as the event source mapping of its template does.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	rt, err := lambdaruntime.New(lambdaruntime.Function{
		Name: "emails", Bootstrap: "bin/emails/bootstrap", Timeout: 30 * time.Second, MaxInstances: 5,
	}, &lambdaruntime.Options{Endpoint: "http://127.0.0.1:4566"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	p, err := esm.New(sqs.NewFromConfig(cfg), rt, esm.Mapping{
		QueueURL:                "http://127.0.0.1:4566/123456789012/emails",
		QueueARN:                "arn:aws:sqs:us-east-1:123456789012:emails",
		BatchSize:               10,
		MaximumConcurrency:      5,
		ReportBatchItemFailures: true,
	}, nil)
	if err != nil {
		panic(err)
	}
	_ = p.Run(ctx) // until ctx ends
}
