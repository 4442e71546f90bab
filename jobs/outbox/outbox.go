// Package outbox enqueues jobs in the same DynamoDB transaction as the business write that calls
// for them: the transactional outbox. Either both the caller's items and the job are written, or
// neither; a job is never sent for a write that did not happen, nor lost after one that did.
//
// The job is written as an outbox item into jobkit's state table (the table the IdempotencyTable
// construct deploys: partition key "id", TTL attribute "expiration"), keyed "outbox#<job id>",
// holding the envelope and where to send it. TransactWriteItems spans tables, so the business
// items stay in the caller's own tables. The table's stream (new images) feeds a Forwarder, which
// sends each new outbox item as an SQS message and deletes it:
//
//	db → TransactWriteItems(business items + outbox item) → stream → Forwarder → SQS → worker
//
// Delivery into SQS is at least once: a forwarder that sends and then dies before its stream
// batch is checkpointed sends again when the batch is retried. The message is the same job (same
// id, and the id is the idempotency key unless EnqueueOpts.Key sets one), so a worker behind the
// idempotency middleware has its effect once.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/jobs"
)

// KeyPrefix starts the partition key of every outbox item: "outbox#<job id>".
const KeyPrefix = "outbox#"

// Attribute names of an outbox item.
const (
	AttrID         = "id"           // KeyPrefix + job id
	AttrQueueURL   = "queue_url"    // where the job goes
	AttrBody       = "body"         // the envelope
	AttrKind       = "kind"         // the job kind (for people reading the table)
	AttrGroupID    = "group_id"     // FIFO message group (or fair-queue tenant)
	AttrDedupID    = "dedup_id"     // FIFO deduplication id
	AttrDeliverAt  = "deliver_at"   // epoch ms the job becomes visible; absent: at once
	AttrPayloadSz  = "payload_size" // a claim check's envelope size in S3 (body is the pointer); absent: none
	AttrExpiration = "expiration"   // TTL, epoch s: an item no forwarder sent goes away then
)

// DefaultRetention is how long an outbox item lives if no forwarder sends it: DynamoDB Streams
// keep records 24 hours, after which a stream that was not read has lost them anyway.
const DefaultRetention = 7 * 24 * time.Hour

// TransactWriter is the DynamoDB call Write makes (a *dynamodb.Client).
type TransactWriter interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Config configures an Outbox.
type Config struct {
	// Table is jobkit's state table (JOBKIT_IDEMPOTENCY_TABLE in a function the constructs wire).
	Table string
	// Client checks, routes and encodes the jobs exactly as it would enqueue them
	// (Client.Prepare); it sends nothing.
	Client *jobs.Client
	// Retention is the outbox item's time to live; default DefaultRetention.
	Retention time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Outbox writes jobs as outbox items.
type Outbox struct {
	cfg Config
}

// New returns an Outbox for cfg.
func New(cfg Config) (*Outbox, error) {
	if cfg.Table == "" {
		return nil, errors.New("outbox: New: no Table")
	}
	if cfg.Client == nil {
		return nil, errors.New("outbox: New: no Client")
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Outbox{cfg: cfg}, nil
}

// Job is one job to write with Write.
type Job struct {
	Args jobs.JobArgs
	Opts *jobs.EnqueueOpts
}

// Put checks and encodes a job (Client.Prepare: an invalid job is a *jobs.InvalidJobError) and
// returns the TransactWriteItem that writes it as an outbox item, for a transaction the caller
// makes, and the job's id. The item is written only if no outbox item has that job id.
func (o *Outbox) Put(ctx context.Context, args jobs.JobArgs, opts *jobs.EnqueueOpts) (types.TransactWriteItem, string, error) {
	j, err := o.cfg.Client.Prepare(ctx, args, opts)
	if err != nil {
		return types.TransactWriteItem{}, j.ID, err
	}
	item := map[string]types.AttributeValue{
		AttrID:         &types.AttributeValueMemberS{Value: KeyPrefix + j.ID},
		AttrQueueURL:   &types.AttributeValueMemberS{Value: j.QueueURL},
		AttrBody:       &types.AttributeValueMemberS{Value: j.Body},
		AttrKind:       &types.AttributeValueMemberS{Value: j.Kind},
		AttrExpiration: &types.AttributeValueMemberN{Value: strconv.FormatInt(o.cfg.Now().Add(o.cfg.Retention).Unix(), 10)},
	}
	if j.GroupID != "" {
		item[AttrGroupID] = &types.AttributeValueMemberS{Value: j.GroupID}
	}
	if j.DedupID != "" {
		item[AttrDedupID] = &types.AttributeValueMemberS{Value: j.DedupID}
	}
	if j.PayloadSize > 0 {
		item[AttrPayloadSz] = &types.AttributeValueMemberN{Value: strconv.Itoa(j.PayloadSize)}
	}
	if !j.DeliverAt.IsZero() {
		item[AttrDeliverAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(j.DeliverAt.UnixMilli(), 10)}
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(o.cfg.Table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{
			"#id": AttrID,
		},
	}}, j.ID, nil
}

// MaxItems is the most items one transaction holds (DynamoDB's limit), the caller's and the
// outbox's together.
const MaxItems = 100

// Write runs one TransactWriteItems with the caller's items and an outbox item per job, and
// returns the jobs' ids in order. Invalid jobs fail before the call (*jobs.InvalidJobError); a
// transaction DynamoDB cancels writes nothing (its error is returned as the SDK gives it, a
// *types.TransactionCanceledException with a reason per item, the outbox items last).
func (o *Outbox) Write(ctx context.Context, db TransactWriter, items []types.TransactWriteItem, jobList ...Job) ([]string, error) {
	if n := len(items) + len(jobList); n > MaxItems {
		return nil, fmt.Errorf("outbox: %d items in one transaction, DynamoDB takes %d", n, MaxItems)
	}
	all := make([]types.TransactWriteItem, 0, len(items)+len(jobList))
	all = append(all, items...)
	ids := make([]string, len(jobList))
	for n, j := range jobList {
		item, id, err := o.Put(ctx, j.Args, j.Opts)
		if err != nil {
			return nil, err
		}
		all, ids[n] = append(all, item), id
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all}); err != nil {
		return nil, fmt.Errorf("outbox: write: %w", err)
	}
	return ids, nil
}
