package localstack_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// stateStack is the sample app's stateful stack: queues, dead-letter queues, tables, schedules.
const stateStack = "JobkitState"

// The cdklocal path the README names: `cdklocal bootstrap` and `cdklocal deploy JobkitState`
// (aws-cdk-local, pinned in infra/tools) onto LocalStack, from the synthesized cdk.out. The
// deployed queues redrive to their holding queues after maxReceiveCount receives (whose redrive
// recorders are the workers stack's), the holding queues to their dead-letter queues, and the
// tables have their TTL on. It needs LocalStack (moto's CloudFormation is what jobkit's own
// deploy drives): make test-localstack runs it; make test, on moto, says so and skips it.
func TestCDKLocalDeploysTheStateStack(t *testing.T) {
	if os.Getenv("JOBKIT_EMULATOR") != "localstack" {
		t.Skip("cdklocal deploys onto LocalStack: make test-localstack runs this test (JOBKIT_EMULATOR=localstack)")
	}
	cfg := awstest.Config(t)
	endpoint := aws.ToString(cfg.BaseEndpoint)
	requireLocalStack(t, endpoint)
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	cdklocal := filepath.Join(root, ".tools", "node_modules", ".bin", "cdklocal")
	require.FileExists(t, cdklocal, "infra/synth.sh installs aws-cdk-local from infra/tools/package-lock.json")
	require.FileExists(t, filepath.Join(root, "cdk.out", "manifest.json"), "make test synthesizes cdk.out first")

	ctx := context.Background()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, cdklocal, append(args, "--no-notices")...)
		cmd.Dir = root
		// cdklocal points every AWS SDK client at AWS_ENDPOINT_URL and insists on an explicit S3
		// endpoint beside it (the bootstrap bucket and the assets go through S3).
		// The CDK CLI's home is LocalStack's own, inside the checkout (make exports one per
		// emulator): its cache maps the test key to an account, and moto's is another.
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+endpoint, "AWS_ENDPOINT_URL_S3="+endpoint,
			"AWS_REGION="+cfg.Region, "CDK_DISABLE_CLI_TELEMETRY=true", "CDK_DISABLE_VERSION_CHECK=1",
			"CDK_HOME="+cmp.Or(os.Getenv("CDK_HOME"), filepath.Join(root, ".run", "cdk-home-localstack")))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "cdklocal %s:\n%s", strings.Join(args, " "), tail(string(out), 40))
	}
	start := time.Now()
	run("bootstrap", "--app", "cdk.out")
	t.Logf("cdklocal bootstrap: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	run("deploy", stateStack, "--app", "cdk.out", "--require-approval", "never")
	t.Logf("cdklocal deploy %s: %s", stateStack, time.Since(start).Round(time.Second))
	t.Cleanup(func() { run("destroy", stateStack, "--app", "cdk.out", "--force") })

	outputs := stackOutputs(t, cfg, stateStack)
	queue, dlq := outputs[contract.OutputQueuePrefix+"Email"], outputs[contract.OutputDLQPrefix+"Email"]
	require.NotEmpty(t, queue, "the Email queue is a stack output: %v", outputs)
	require.NotEmpty(t, dlq, "its DLQ too")
	requireRedrive(t, cfg, queue, dlq)
	requireTTL(t, cfg, outputs)
}

// requireLocalStack fails unless endpoint is LocalStack (its health document answers).
func requireLocalStack(t *testing.T, endpoint string) {
	t.Helper()
	resp, err := http.Get(endpoint + "/_localstack/health")
	require.NoError(t, err, "JOBKIT_EMULATOR=localstack, yet nothing answers at %s", endpoint)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s is not LocalStack", endpoint)
}

func stackOutputs(t *testing.T, cfg aws.Config, stack string) map[string]string {
	t.Helper()
	out, err := cloudformation.NewFromConfig(cfg).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	require.NoError(t, err)
	require.Len(t, out.Stacks, 1)
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

// redrivePolicy returns the URL of the queue queue's redrive policy targets, and its maxReceiveCount.
func redrivePolicy(t *testing.T, client *sqs.Client, queue string) (target string, maxReceives int) {
	t.Helper()
	ctx := context.Background()
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queue),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	require.NoError(t, err)
	policy := attrs.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	var p struct {
		Target string `json:"deadLetterTargetArn"`
		Max    any    `json:"maxReceiveCount"` // a number, or a string
	}
	require.NoError(t, json.Unmarshal([]byte(policy), &p), policy)
	maxReceives, err = strconv.Atoi(strings.Trim(fmt.Sprint(p.Max), `"`))
	require.NoError(t, err, policy)
	require.Positive(t, maxReceives, policy)
	u, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(awsarn.QueueName(p.Target))})
	require.NoError(t, err, policy)
	return aws.ToString(u.QueueUrl), maxReceives
}

// requireRedrive receives one message maxReceiveCount times, releasing it at once each time, and
// then finds it in the holding queue the redrive policy names, whose own redrive policy names the
// dead-letter queue, after RecorderReceives more receives.
func requireRedrive(t *testing.T, cfg aws.Config, queue, dlq string) {
	t.Helper()
	ctx := context.Background()
	client := sqs.NewFromConfig(cfg)
	held, maxReceives := redrivePolicy(t, client, queue)
	require.NotEqual(t, awsarn.QueueName(dlq), awsarn.QueueName(held), "the queue redrives to its holding queue")
	target, heldReceives := redrivePolicy(t, client, held)
	require.Equal(t, awsarn.QueueName(dlq), awsarn.QueueName(target), "the holding queue redrives to the DLQ")
	require.Equal(t, maxReceives+10, heldReceives, "RecorderReceives more")

	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(`{"v":1,"id":"cdklocal-1","kind":"email.send","args":{}}`)})
	require.NoError(t, err)
	for range maxReceives {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), WaitTimeSeconds: 5})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		_, err = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue),
			ReceiptHandle: got.Messages[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	// The next receive finds the count used up: SQS moves the message instead of returning it.
	got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Empty(t, got.Messages)
	moved, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(held), WaitTimeSeconds: 5})
	require.NoError(t, err)
	require.Len(t, moved.Messages, 1, "after %d receives the message is in the holding queue", maxReceives)
	require.Contains(t, aws.ToString(moved.Messages[0].Body), "cdklocal-1")
}

// requireTTL checks that the idempotency table has its time to live on "expiration" (the
// ledger table keeps its items: no TTL).
func requireTTL(t *testing.T, cfg aws.Config, outputs map[string]string) {
	t.Helper()
	db := dynamodb.NewFromConfig(cfg)
	tables := 0
	for key, name := range outputs {
		if !strings.HasPrefix(key, "ExportsOutputRef") || !strings.Contains(key, "IdempotencyTable") {
			continue
		}
		tables++
		ttl, err := db.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		require.NoError(t, err, name)
		d := ttl.TimeToLiveDescription
		require.Contains(t, []ddbtypes.TimeToLiveStatus{ddbtypes.TimeToLiveStatusEnabled, ddbtypes.TimeToLiveStatusEnabling}, d.TimeToLiveStatus, name)
		require.Equal(t, "expiration", aws.ToString(d.AttributeName), name)
	}
	require.Equal(t, 1, tables, "the idempotency table: %v", outputs)
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
