package constructs

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/idempotency"
)

// Attribute names of the idempotency table: the idempotency package's DynamoDB store owns them.
const (
	IdempotencyKeyAttribute = idempotency.AttrID         // partition key, string
	IdempotencyTTLAttribute = idempotency.AttrExpiration // epoch seconds; DynamoDB TTL deletes expired records
)

// IdempotencyTableProps configures an IdempotencyTable. There is nothing to set yet; it exists so
// that options can be added without breaking callers.
type IdempotencyTableProps struct{}

// IdempotencyTable is the DynamoDB table of the idempotency store: partition key "id" (string),
// TTL on "expiration", on-demand capacity, point-in-time recovery, and kept when the stack is
// deleted (RemovalPolicy RETAIN: it guards against running a job twice).
type IdempotencyTable struct {
	constructs.Construct
	Table awsdynamodb.Table
}

// NewIdempotencyTable defines an IdempotencyTable.
func NewIdempotencyTable(scope constructs.Construct, id string, _ *IdempotencyTableProps) *IdempotencyTable {
	c := constructs.NewConstruct(scope, jsii.String(id))
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
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	return &IdempotencyTable{Construct: c, Table: t}
}
