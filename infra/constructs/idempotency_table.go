package constructs

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Attribute names of the idempotency table: the idempotency package's DynamoDB store owns them.
const (
	IdempotencyKeyAttribute = idempotency.AttrID         // partition key, string
	IdempotencyTTLAttribute = idempotency.AttrExpiration // epoch seconds; DynamoDB TTL deletes expired records
)

// IdempotencyTableProps configures an IdempotencyTable.
type IdempotencyTableProps struct {
	// EncryptionKey encrypts the table with this customer-managed KMS key; nil means the
	// AWS-managed key (aws/dynamodb), stated in the template (SSESpecification).
	EncryptionKey awskms.IKey
	// NoOutput leaves out the stack output JobkitStateTable (contract.OutputStateTable) that names
	// the table to the CLI and the console: set it on a second table in the same stack.
	NoOutput bool
}

// IdempotencyTable is the jobkit state table: the idempotency store's records and, with package
// jobs/state, job states by id (job#<id>), unique keys (uniq#...) and fan-out batches (batch#...),
// each under its own key prefix. Partition key "id" (string), TTL on "expiration", on-demand
// capacity, point-in-time recovery, encrypted at rest with a KMS key, kept when the stack is
// deleted (RemovalPolicy RETAIN: it guards against running a job twice), and named in the stack
// output JobkitStateTable.
type IdempotencyTable struct {
	constructs.Construct
	Table awsdynamodb.Table
}

// NewIdempotencyTable defines an IdempotencyTable.
func NewIdempotencyTable(scope constructs.Construct, id string, props *IdempotencyTableProps) *IdempotencyTable {
	var p IdempotencyTableProps
	if props != nil {
		p = *props
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	enc := awsdynamodb.TableEncryption_AWS_MANAGED
	if p.EncryptionKey != nil {
		enc = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
	}
	t := awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{
			Name: jsii.String(IdempotencyKeyAttribute),
			Type: awsdynamodb.AttributeType_STRING,
		},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(IdempotencyTTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:    enc,
		EncryptionKey: p.EncryptionKey,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	// Jobs by queue and state, newest first (jobs/state Table.List, jobkit jobs list, the console).
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:    jsii.String(contract.StateIndex),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(contract.AttrListKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(contract.AttrListAt), Type: awsdynamodb.AttributeType_NUMBER},
		// Keys and kind only: the index is written when a job's state changes, not when its
		// progress, lease or result does; List reads the items themselves.
		ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes: jsii.Strings("kind"),
	})
	if !p.NoOutput {
		out := awscdk.NewCfnOutput(c, jsii.String("StateTable"), &awscdk.CfnOutputProps{
			Value:       t.TableName(),
			Description: jsii.String("jobkit state table (idempotency records, job states, unique keys, batches)"),
		})
		out.OverrideLogicalId(jsii.String(contract.OutputStateTable))
	}
	return &IdempotencyTable{Construct: c, Table: t}
}
