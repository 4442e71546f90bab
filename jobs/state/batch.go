package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// Shard counts of a batch.
const (
	DefaultShards = 32
	MaxShards     = 1000
)

// CallbackLease is how long a run that takes a batch's callback has to send it before another
// may.
const CallbackLease = 30 * time.Second

// Batch attributes.
const (
	attrShards     = "shards"
	attrShardsLeft = "shards_left"
	attrSealed     = "sealed"
	attrCbKind     = "callback_kind"
	attrCbArgs     = "callback_args"
	attrCbQueue    = "callback_queue"
	attrCbGroup    = "callback_group"
	attrCbLease    = "callback_lease"
	attrCbSent     = "callback_sent"
	attrCreatedAt  = "created_at"
	attrFailKind   = "failure_kind"
	attrFailArgs   = "failure_args"
	attrFailQueue  = "failure_queue"
	attrDeadline   = "deadline"
	attrExpiredAt  = "expired_at"
	attrPending    = "pending"
	attrAdded      = "added"
	attrSucceeded  = "succeeded"
	attrDead       = "dead"
	attrClosed     = "closed"
)

// Errors about batches.
var (
	ErrBatchSealed   = errors.New("state: the batch is closed: no member can be added")
	ErrBatchNotFound = errors.New("state: no such batch")
	ErrBatchExists   = errors.New("state: a batch with this id exists")
	ErrNoCallback    = errors.New("state: a batch needs a callback job (BatchOpts.Callback) with a kind")
	ErrInvalidBatch  = errors.New("state: invalid batch id (1-200 ASCII letters, digits or punctuation, no '#')")
)

// CallbackPendingError: another run holds the batch's callback lease until Until.
type CallbackPendingError struct {
	Batch string
	Until time.Time
}

func (e *CallbackPendingError) Error() string {
	return fmt.Sprintf("state: batch %q: another run is sending the callback (lease until %s)", e.Batch, e.Until.UTC().Format(time.RFC3339))
}

// BatchResult is what a batch's callback job learns: embed it in the callback's args type.
//
//	type ReportReady struct {
//		state.BatchResult
//		Report string `json:"report"`
//	}
type BatchResult struct {
	BatchID   string `json:"batch_id"`
	Total     int    `json:"total"`
	Succeeded int    `json:"succeeded"`
	Dead      int    `json:"dead"`
	// Pending and TimedOut are set on a failure callback sent at the batch's deadline: the
	// members that had not ended then.
	Pending  int  `json:"pending,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
}

// BatchOpts shape a new batch.
type BatchOpts struct {
	// ID is the batch id; empty means a new ULID.
	ID string
	// Callback is the job enqueued once every member has succeeded or died: its JSON object
	// gets the BatchResult members (batch_id, total, succeeded, dead) set.
	Callback jobs.JobArgs
	// Queue overrides the queue the callback's kind is routed to; GroupID is its FIFO group.
	Queue, GroupID string
	// OnFailure, if set, is a job enqueued once (id FailureID) when the batch fails: it ends with
	// a dead member (besides Callback), or Deadline passes before every member has ended. Its
	// JSON object gets the BatchResult members set (pending and timed_out at the deadline). It
	// goes to Queue, else the queue its kind is routed to.
	OnFailure jobs.JobArgs
	// Deadline, if set, is how long after OpenBatch the batch may take: then a deadline job
	// (BatchDeadline, delayed by Deadline, on the callback's queue) sends OnFailure if members
	// are still pending. The worker consuming that queue must run it: register
	// Table.DeadlineWorker there. Beyond 15 minutes the delay needs the client's Scheduler.
	Deadline time.Duration
}

// BatchInfo is a batch's state (BatchStatus).
type BatchInfo struct {
	ID             string    `json:"id"`
	Shards         int       `json:"shards"`
	Sealed         bool      `json:"sealed"` // closed: no member can be added
	Total          int       `json:"total"`
	Pending        int       `json:"pending"`
	Succeeded      int       `json:"succeeded"`
	Dead           int       `json:"dead"`
	CallbackKind   string    `json:"callback_kind"`
	CallbackID     string    `json:"callback_id"`
	CallbackSentAt time.Time `json:"callback_sent_at,omitzero"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	// Deadline is when the batch's deadline passes (BatchOpts.Deadline), ExpiredAt when its
	// deadline job found members pending and sent the failure callback; zero when none.
	Deadline  time.Time `json:"deadline,omitzero"`
	ExpiredAt time.Time `json:"expired_at,omitzero"`
}

// Done reports whether the batch's callback has been sent.
func (b *BatchInfo) Done() bool { return !b.CallbackSentAt.IsZero() }

// Batch is an open fan-out batch: Add members, then Close it.
type Batch struct {
	ID     string
	t      *Table
	client *jobs.Client
	shards int
}

// CallbackID returns the id of a batch's callback job.
func CallbackID(batch string) string { return batch + ".callback" }

func metaKey(batch string) string         { return PrefixBatch + batch }
func shardKey(batch string, k int) string { return PrefixBatch + batch + "#" + strconv.Itoa(k) }
func shardOf(member string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(member))
	return int(h.Sum32() % uint32(shards))
}

func validBatchID(id string) bool {
	if len(id) == 0 || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < '!' || c > '~' || c == '#' {
			return false
		}
	}
	return true
}

// OpenBatch creates a batch whose members and callback client sends: one PutItem. The callback
// is routed as client routes its kind, unless opts.Queue says otherwise.
func (t *Table) OpenBatch(ctx context.Context, client *jobs.Client, opts BatchOpts) (*Batch, error) {
	if client == nil {
		return nil, errors.New("state: OpenBatch: nil client")
	}
	if opts.Callback == nil || opts.Callback.Kind() == "" {
		return nil, ErrNoCallback
	}
	id := opts.ID
	if id == "" {
		id = jobs.NewID()
	}
	if !validBatchID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidBatch, id)
	}
	queue := opts.Queue
	if queue == "" {
		queue = client.QueueFor(opts.Callback.Kind())
	}
	if queue == "" {
		return nil, fmt.Errorf("state: OpenBatch: %w", jobs.ErrNoQueue)
	}
	if awsarn.IsFIFO(queue) && opts.GroupID == "" {
		return nil, fmt.Errorf("state: OpenBatch: %w", jobs.ErrGroupRequired)
	}
	args, err := json.Marshal(opts.Callback)
	if err != nil {
		return nil, fmt.Errorf("state: OpenBatch: %w: %w", jobs.ErrEncodeArgs, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("state: OpenBatch: the callback's args must encode as a JSON object: %s", args)
	}
	now := t.o.Now()
	item := map[string]types.AttributeValue{
		idempotency.AttrID:         s(metaKey(id)),
		idempotency.AttrExpiration: n(now.Add(t.o.Expiry).Unix()),
		attrShards:                 n(int64(t.o.Shards)),
		attrShardsLeft:             n(int64(t.o.Shards)),
		attrSealed:                 &types.AttributeValueMemberBOOL{Value: false},
		attrCbKind:                 s(opts.Callback.Kind()),
		attrCbArgs:                 s(string(args)),
		attrCbQueue:                s(queue),
		attrCreatedAt:              ms(now),
	}
	if opts.GroupID != "" {
		item[attrCbGroup] = s(opts.GroupID)
	}
	if err := failureAttrs(item, client, opts, now); err != nil {
		return nil, err
	}
	cond := expression.AttributeNotExists(expression.Name(idempotency.AttrID))
	expr, _ := expression.NewBuilder().WithCondition(cond).Build()
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.name), Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, fmt.Errorf("%w: %q", ErrBatchExists, id)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open batch %q: %w", id, err)
	}
	if err := t.armDeadline(ctx, client, id, queue, opts); err != nil {
		return nil, err
	}
	return &Batch{ID: id, t: t, client: client, shards: t.o.Shards}, nil
}

// Batch returns the open batch id, to add members to or close (from another process than the
// one that opened it).
func (t *Table) Batch(ctx context.Context, client *jobs.Client, id string) (*Batch, error) {
	shards, err := t.batchShards(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Batch{ID: id, t: t, client: client, shards: shards}, nil
}

// Add enqueues members of the batch (with the client's EnqueueBatch, so the client needs
// ClientOptions.State). Each member's shard counter is raised before it is sent, on the condition
// that the batch is not yet closed (ErrBatchSealed), and lowered again for members not sent.
func (b *Batch) Add(ctx context.Context, members []jobs.BatchJob) ([]jobs.EnqueueResult, error) {
	if b.client == nil {
		return nil, errors.New("state: Batch.Add: no client")
	}
	list := make([]jobs.BatchJob, len(members))
	perShard := map[int]int64{}
	for i, m := range members {
		var o jobs.EnqueueOpts
		if m.Opts != nil {
			o = *m.Opts
		}
		if o.ID == "" {
			o.ID = jobs.NewID()
		}
		o.Batch = b.ID
		list[i] = jobs.BatchJob{Args: m.Args, Opts: &o}
		perShard[shardOf(o.ID, b.shards)]++
	}
	var raised []int
	for k, c := range perShard {
		if err := b.raise(ctx, k, c, true); err != nil {
			for _, r := range raised {
				_ = b.raise(context.WithoutCancel(ctx), r, -perShard[r], false)
			}
			return nil, err
		}
		raised = append(raised, k)
	}
	results, err := b.client.EnqueueBatch(ctx, list)
	unsent := map[int]int64{}
	for i := range results {
		if results[i].Err != nil {
			unsent[shardOf(list[i].Opts.ID, b.shards)]++
		}
	}
	for k, c := range unsent {
		_ = b.raise(context.WithoutCancel(ctx), k, -c, false)
	}
	return results, err
}

// raise adds c members to shard k (open: on the condition that the batch is not sealed).
func (b *Batch) raise(ctx context.Context, k int, c int64, open bool) error {
	up := expression.Add(expression.Name(attrPending), expression.Value(c)).
		Add(expression.Name(attrAdded), expression.Value(c)).
		Set(expression.Name(idempotency.AttrExpiration), expression.Value(b.t.o.Now().Add(b.t.o.Expiry).Unix()))
	expr, err := expression.NewBuilder().WithUpdate(up).Build()
	if err != nil {
		return err
	}
	update := &types.Update{
		TableName: aws.String(b.t.name), Key: key(shardKey(b.ID, k)), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	if !open {
		_, err := b.t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: update.TableName, Key: update.Key, UpdateExpression: update.UpdateExpression,
			ExpressionAttributeNames: update.ExpressionAttributeNames, ExpressionAttributeValues: update.ExpressionAttributeValues,
		})
		return err
	}
	cond, _ := expression.NewBuilder().WithCondition(expression.Name(attrSealed).Equal(expression.Value(false))).Build()
	_, err = b.t.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(b.t.name), Key: key(metaKey(b.ID)), ConditionExpression: cond.Condition(),
			ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values(),
		}},
		{Update: update},
	}})
	if cancelled(err, 0) {
		return fmt.Errorf("%w: %q", ErrBatchSealed, b.ID)
	}
	if err != nil {
		return fmt.Errorf("state: add to batch %q: %w", b.ID, err)
	}
	return nil
}

// Close seals the batch (no more members) and, if every member has already ended, sends the
// callback. Call it once every Add has returned; it is safe to repeat.
func (b *Batch) Close(ctx context.Context) error {
	up := expression.Set(expression.Name(attrSealed), expression.Value(true))
	expr, _ := expression.NewBuilder().WithUpdate(up).
		WithCondition(expression.AttributeExists(expression.Name(idempotency.AttrID))).Build()
	_, err := b.t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.t.name), Key: key(metaKey(b.ID)), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: %q", ErrBatchNotFound, b.ID)
	}
	if err != nil {
		return fmt.Errorf("state: close batch %q: %w", b.ID, err)
	}
	for k := 0; k < b.shards; k++ {
		if err := b.t.closeShard(ctx, b.ID, k); err != nil {
			return err
		}
	}
	// Another run holding the callback's lease (a member that ended just now) is sending it:
	// the batch is sealed and its callback in hand, which is all Close promises.
	var pending *CallbackPendingError
	if err := b.t.maybeCallback(ctx, b.ID, b.shards, b.client); err != nil && !errors.As(err, &pending) {
		return err
	}
	return nil
}

// cancelled reports whether err is a cancelled transaction whose item i failed its condition.
func cancelled(err error, i int) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || i >= len(tce.CancellationReasons) {
		return false
	}
	return aws.ToString(tce.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}
