package awstest_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// OnCall sees each call once, with its operation and input; two of them on one client both do.
func TestOnCall(t *testing.T) {
	t.Parallel()
	cfg, _ := awstest.SQS(t)
	var mu sync.Mutex
	var seen []string
	record := func(who string) func(string, any) {
		return func(op string, input any) {
			mu.Lock()
			defer mu.Unlock()
			_, isList := input.(*sqs.ListQueuesInput)
			require.True(t, isList, "input %T", input)
			seen = append(seen, who+" "+op)
		}
	}
	cfg.APIOptions = append(cfg.APIOptions, awstest.OnCall(record("config")))
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, awstest.OnCall(record("client"))) })
	_, err := client.ListQueues(context.Background(), &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"config ListQueues", "client ListQueues"}, seen)
}
