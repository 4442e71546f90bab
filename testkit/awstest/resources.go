package awstest

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Queue is an SQS queue a test created.
type Queue struct {
	Name string
	URL  string
	ARN  string
}

// QueueOptions shapes a test queue. Nil means a Standard queue with the queue defaults.
type QueueOptions struct {
	FIFO              bool
	VisibilityTimeout int               // seconds; 0 keeps the queue default (30)
	DLQ               *Queue            // redrive to this queue after MaxReceiveCount receives
	MaxReceiveCount   int               // with DLQ; 0 means 3
	Attributes        map[string]string // any other queue attributes
}

// CreateQueue creates a queue named after the test and deletes it when the test ends.
func CreateQueue(tb testing.TB, cfg aws.Config, suffix string, opts *QueueOptions) Queue {
	tb.Helper()
	if opts == nil {
		opts = &QueueOptions{}
	}
	client := sqs.NewFromConfig(cfg)
	name := Name(tb, suffix)
	attrs := map[string]string{}
	for k, v := range opts.Attributes {
		attrs[k] = v
	}
	if opts.FIFO {
		name += ".fifo"
		attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
	}
	if opts.VisibilityTimeout > 0 {
		attrs[string(sqstypes.QueueAttributeNameVisibilityTimeout)] = strconv.Itoa(opts.VisibilityTimeout)
	}
	if opts.DLQ != nil {
		n := opts.MaxReceiveCount
		n = cmp.Or(n, 3)
		attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] =
			`{"deadLetterTargetArn":"` + opts.DLQ.ARN + `","maxReceiveCount":"` + strconv.Itoa(n) + `"}`
	}
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		tb.Fatalf("awstest: create queue %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	Cleanup(tb, "queue "+name, func(ctx context.Context) error {
		_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		return err
	})
	got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		tb.Fatalf("awstest: queue arn %s: %v", name, err)
	}
	return Queue{Name: name, URL: url, ARN: got.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]}
}

// CreateTable creates an on-demand DynamoDB table with a string partition key (and an optional
// string sort key), waits until it is active and deletes it when the test ends. It returns the name.
func CreateTable(tb testing.TB, cfg aws.Config, suffix, partitionKey, sortKey string) string {
	tb.Helper()
	return createTable(tb, cfg, suffix, partitionKey, sortKey, nil)
}

// CreateStateTable creates a jobkit state table as the IdempotencyTable construct deploys it —
// partition key "id" and the index of jobs by queue and state (contract.StateIndex) — waits
// until it is active and deletes it when the test ends. It returns the name.
func CreateStateTable(tb testing.TB, cfg aws.Config) string {
	tb.Helper()
	return createTable(tb, cfg, "state", "id", "", func(in *dynamodb.CreateTableInput) {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			ddbtypes.AttributeDefinition{AttributeName: aws.String(contract.AttrListKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
			ddbtypes.AttributeDefinition{AttributeName: aws.String(contract.AttrListAt), AttributeType: ddbtypes.ScalarAttributeTypeN})
		in.GlobalSecondaryIndexes = []ddbtypes.GlobalSecondaryIndex{{
			IndexName: aws.String(contract.StateIndex),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String(contract.AttrListKey), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String(contract.AttrListAt), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeInclude, NonKeyAttributes: []string{"kind"}},
		}}
	})
}

func createTable(tb testing.TB, cfg aws.Config, suffix, partitionKey, sortKey string, edit func(*dynamodb.CreateTableInput)) string {
	tb.Helper()
	client := dynamodb.NewFromConfig(cfg)
	name := Name(tb, suffix)
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(partitionKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(partitionKey), KeyType: ddbtypes.KeyTypeHash},
		},
	}
	if sortKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			ddbtypes.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: ddbtypes.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema,
			ddbtypes.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: ddbtypes.KeyTypeRange})
	}
	if edit != nil {
		edit(in)
	}
	ctx := context.Background()
	if _, err := client.CreateTable(ctx, in); err != nil {
		// The name is unique to this call, so "in use" means the SDK retried a create whose
		// response was lost (the emulator drops a response now and then): the table is ours.
		var inUse *ddbtypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			tb.Fatalf("awstest: create table %s: %v", name, err)
		}
	}
	Cleanup(tb, "table "+name, func(ctx context.Context) error {
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		return err
	})
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		tb.Fatalf("awstest: table %s not active: %v", name, err)
	}
	return name
}

// QueueWithDLQ creates a dead-letter queue (FIFO when opts says so) and a queue named by suffix
// whose redrive policy targets it (opts.DLQ is set to it), and returns both.
func QueueWithDLQ(tb testing.TB, cfg aws.Config, suffix string, opts *QueueOptions) (q, dlq Queue) {
	tb.Helper()
	o := QueueOptions{}
	if opts != nil {
		o = *opts
	}
	dlq = CreateQueue(tb, cfg, "dlq", &QueueOptions{FIFO: o.FIFO})
	o.DLQ = &dlq
	return CreateQueue(tb, cfg, suffix, &o), dlq
}

// EachQueueType runs test as two parallel subtests, "Standard" and "FIFO", for a behaviour both
// kinds of queue must show.
func EachQueueType(t *testing.T, test func(t *testing.T, fifo bool)) {
	t.Helper()
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "Standard", true: "FIFO"}[fifo], func(t *testing.T) {
			t.Parallel()
			test(t, fifo)
		})
	}
}
