package state

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// DynamoDBAPI is the part of the DynamoDB client a Table calls: the idempotency store's calls
// (the Table is one), and batch writes for fan-out.
type DynamoDBAPI interface {
	idempotency.DynamoDBAPI
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	// List's index queries and reads.
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// SQSAPI is the SQS call a Table makes: sending a batch's callback job.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var (
	_ DynamoDBAPI     = (*dynamodb.Client)(nil)
	_ SQSAPI          = (*sqs.Client)(nil)
	_ jobs.StateStore = (*Table)(nil)
)

// Key prefixes of the items this package writes in the jobkit state table.
const (
	PrefixJob    = "job#"
	PrefixUnique = "uniq#"
	PrefixBatch  = "batch#"
)

// Attribute names of job items (besides idempotency.AttrID and idempotency.AttrExpiration).
const (
	attrState        = "state"
	attrKind         = "kind"
	attrQueue        = "queue"
	attrBatch        = "batch"
	attrIdemKey      = "idem_key" // the job's idempotency record key (idempotency.JobKey)
	attrEnqueuedAt   = "enqueued_at"
	attrDeliverAt    = "deliver_at"
	attrSince        = "since"
	attrAttempt      = idempotency.AttrAttempt
	attrNextAttempt  = "next_attempt_at"
	attrFinishedAt   = idempotency.AttrFinishedAt
	attrLastError    = "last_error"
	attrReason       = "reason"
	attrResult       = "result"
	attrBatchCounted = "batch_counted" // the member's end counted in its batch: succeeded or dead
	attrReceipt      = "receipt"       // a retrying job's receipt handle (jobs.Client.RetryNow)
	attrOpCancelled  = "op_cancelled"  // cancelled by an operator (CancelJob), not by its worker
	attrProgress     = "progress"      // a running job's last reported percent (jobs.ReportProgress)
	attrProgressNote = "progress_note"
	attrProgressAt   = "progress_at"
	attrJobID        = idempotency.AttrJobID
)

// DefaultExpiry is how long job items, batches and their shards stay in the table (DynamoDB TTL).
const DefaultExpiry = 14 * 24 * time.Hour

// Options configure a Table.
type Options struct {
	// Expiry is how long a job's state is kept after its last change; default DefaultExpiry.
	// Succeeded states folded into idempotency records last as long as those records
	// (idempotency.Config.Expiry).
	Expiry time.Duration
	// SQS sends batch callbacks: required in the workers of batch members.
	SQS SQSAPI
	// Shards is the number of counter shards of a new batch; default DefaultShards.
	Shards int
	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
	// ListJobs keeps the jobs this table records listed by queue and state in the table's index
	// (contract.StateIndex), for List: the enqueued, retrying, dead and cancelled states this
	// table writes. Set it on the producers and the workers alike, and on the workers' store too
	// (idempotency.DynamoDBOptions.ListJobs: running and succeeded), as setup does with
	// JOBKIT_LIST_JOBS. The index bills its own writes: a job that succeeds costs four write
	// units more (docs/benchmarks.md). Off, List finds no job these writes recorded.
	ListJobs bool
}

// Table is the jobkit state table. It implements jobs.StateStore, and is safe for concurrent use.
type Table struct {
	db   DynamoDBAPI
	name string
	o    Options
}

// New returns the state table name, called through db (usually a *dynamodb.Client).
func New(db DynamoDBAPI, name string, opts *Options) (*Table, error) {
	if db == nil {
		return nil, errors.New("state: nil DynamoDB client")
	}
	if name == "" {
		return nil, errors.New("state: empty table name")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	o.Shards = cmp.Or(o.Shards, DefaultShards)
	if o.Shards < 1 || o.Shards > MaxShards {
		return nil, fmt.Errorf("state: Shards %d: want 1-%d", o.Shards, MaxShards)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Table{db: db, name: name, o: o}, nil
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

func jobKey(id string) map[string]types.AttributeValue { return key(PrefixJob + id) }

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{idempotency.AttrID: &types.AttributeValueMemberS{Value: k}}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func ms(t time.Time) types.AttributeValue {
	return n(t.UnixMilli())
}

// idemKey is the idempotency record key of a job (idempotency.JobKey).
func idemKey(kind, key, id string) string {
	return idempotency.JobKey(&jobs.JobRow{Kind: kind, Key: key, ID: id})
}

// JobsEnqueued implements jobs.StateStore: one write per job (BatchWriteItem, 25 a call).
func (t *Table) JobsEnqueued(ctx context.Context, list []jobs.PreparedJob) error {
	exp := n(t.o.Now().Add(t.o.Expiry).Unix())
	reqs := make([]types.WriteRequest, 0, len(list))
	for _, j := range list {
		item := map[string]types.AttributeValue{
			idempotency.AttrID:         s(PrefixJob + j.ID),
			idempotency.AttrExpiration: exp,
			attrState:                  s(string(jobs.StateEnqueued)),
			attrKind:                   s(j.Kind),
			attrIdemKey:                s(idemKey(j.Kind, j.Key, j.ID)),
			attrEnqueuedAt:             ms(j.EnqueuedAt),
			attrSince:                  ms(j.EnqueuedAt),
		}
		if j.QueueURL != "" {
			item[attrQueue] = s(j.QueueURL)
			if t.o.ListJobs {
				item[contract.AttrListKey] = s(contract.ListKey(j.QueueURL, string(jobs.StateEnqueued)))
				item[contract.AttrListAt] = ms(j.EnqueuedAt)
			}
		}
		if j.Batch != "" {
			item[attrBatch] = s(j.Batch)
		}
		if !j.DeliverAt.IsZero() {
			item[attrDeliverAt] = ms(j.DeliverAt)
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	return t.batchWrite(ctx, reqs)
}

// JobsNotSent implements jobs.StateStore.
func (t *Table) JobsNotSent(ctx context.Context, ids []string) error {
	reqs := make([]types.WriteRequest, len(ids))
	for i, id := range ids {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: jobKey(id)}}
	}
	return t.batchWrite(ctx, reqs)
}

// batchWrite writes reqs 25 at a time, retrying unprocessed items a few times.
func (t *Table) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		chunk := reqs[:min(25, len(reqs))]
		reqs = reqs[len(chunk):]
		for try := 0; len(chunk) > 0; try++ {
			if try == 8 {
				return fmt.Errorf("state: %d job states not written: DynamoDB left them unprocessed", len(chunk))
			}
			out, err := t.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{t.name: chunk}})
			if err != nil {
				return fmt.Errorf("state: write job states: %w", err)
			}
			chunk = out.UnprocessedItems[t.name]
			if len(chunk) > 0 {
				time.Sleep(time.Duration(10<<try) * time.Millisecond)
			}
		}
	}
	return nil
}

// ReserveUnique implements jobs.StateStore: one conditional PutItem on uniq#<kind>#<key>, which
// returns the holder in the same call when the key is held.
func (t *Table) ReserveUnique(ctx context.Context, kind, k, id string, until, now time.Time) (string, error) {
	free := expression.AttributeNotExists(expression.Name(idempotency.AttrID)).
		Or(expression.Name(idempotency.AttrExpiration).LessThanEqual(expression.Value(now.Unix())))
	expr, err := expression.NewBuilder().WithCondition(free).Build()
	if err != nil {
		return "", err
	}
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.name),
		Item: map[string]types.AttributeValue{
			idempotency.AttrID:         s(uniqueKey(kind, k)),
			idempotency.AttrExpiration: n(until.Unix()),
			attrJobID:                  s(id),
		},
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return id, nil
	case errors.As(err, &ccf):
		if holder := str(ccf.Item, attrJobID); holder != "" {
			return holder, nil // may be id itself: an earlier attempt of this call wrote it
		}
		return "", fmt.Errorf("state: unique key %q is held, but its holder was not returned", k)
	default:
		return "", fmt.Errorf("state: reserve unique key %q: %w", k, err)
	}
}

// ReleaseUnique implements jobs.StateStore: deletes the key if id holds it.
func (t *Table) ReleaseUnique(ctx context.Context, kind, k, id string) error {
	cond := expression.Name(attrJobID).Equal(expression.Value(id))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = t.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(t.name), Key: key(uniqueKey(kind, k)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return err
}

func uniqueKey(kind, k string) string { return PrefixUnique + kind + "#" + k }

// JobSettled implements jobs.StateStore: one UpdateItem of the job's item; for a dead or
// cancelled batch member, the transaction that counts it in its batch instead, then the batch's
// advance (see the package doc). An Attempt of 0 (unknown: the redrive recorder's) keeps the
// attempt recorded before.
func (t *Table) JobSettled(ctx context.Context, row *jobs.JobRow, st jobs.JobStatus) error {
	now := t.o.Now()
	up := t.stateUpdate(row, st.State, now)
	if st.Attempt > 0 {
		up = up.Set(expression.Name(attrAttempt), expression.Value(st.Attempt))
	}
	if st.LastError != "" {
		up = up.Set(expression.Name(attrLastError), expression.Value(st.LastError))
	}
	if st.Reason != "" {
		up = up.Set(expression.Name(attrReason), expression.Value(st.Reason))
	}
	if !st.NextAttemptAt.IsZero() {
		up = up.Set(expression.Name(attrNextAttempt), expression.Value(st.NextAttemptAt.UnixMilli()))
	}
	if !st.FinishedAt.IsZero() {
		up = up.Set(expression.Name(attrFinishedAt), expression.Value(st.FinishedAt.UnixMilli()))
	}
	if st.State == jobs.StateRetrying && st.Receipt != "" {
		up = up.Set(expression.Name(attrReceipt), expression.Value(st.Receipt))
	} else {
		up = up.Remove(expression.Name(attrReceipt))
	}
	if row.Batch != "" && st.State != jobs.StateRetrying {
		return t.memberDone(ctx, row, up, false)
	}
	if st.State == jobs.StateRetrying {
		// A retry recorded after an operator's cancel (it landed while the attempt failed) would
		// hide the cancel: the cancel stays, and the next delivery deletes the job unrun.
		if err := t.updateJobIf(ctx, row.ID, up, notCancelled()); !errors.Is(err, errCondition) {
			return err
		}
		return nil
	}
	return t.updateJob(ctx, row.ID, up)
}

// CancelJob implements jobs.StateStore. It reads the job's item, then writes the cancellation as
// the job's idempotency record (idempotency.Canceller: refused while a claim is in progress or
// once a run completed), which the next delivery's claim finds, then moves the job's item to
// cancelled, marked as an operator's cancel (attrOpCancelled), on the condition that it is still
// enqueued or retrying (a batch member is counted in its batch, as a dead one is). The record
// lasts as long as the job's item (Options.Expiry) after the job's delivery time, longer than a
// message can stay on its queue. Repeated, it answers with the cancellation in place.
func (t *Table) CancelJob(ctx context.Context, id, note string) (jobs.JobStatus, error) {
	item, st, err := t.jobItem(ctx, id)
	if err != nil {
		return st, err
	}
	switch {
	case st.State == jobs.StateCancelled && boolean(item, attrOpCancelled):
		return st, nil
	case st.State != jobs.StateEnqueued && st.State != jobs.StateRetrying:
		// Running (jobs/state's Middleware alone records it on the item), succeeded, dead, or
		// cancelled by its worker and dead-lettered.
		return st, &jobs.NotCancellableError{Status: st}
	}
	ik := str(item, attrIdemKey)
	if ik == "" {
		return st, fmt.Errorf("state: job %q has no idempotency key recorded: it cannot be cancelled", id)
	}
	now := time.UnixMilli(t.o.Now().UnixMilli()).UTC() // as the item keeps it
	rec := &idempotency.Record{Key: ik, Status: idempotency.StatusCancelled, JobID: id,
		ExpiresAt: later(now, st.DeliverAt).Add(t.o.Expiry), LeaseEnd: now, StartedAt: now}
	err = idempotency.NewDynamoDBStore(t.db, t.name).Cancel(ctx, rec, now)
	var held *idempotency.AlreadyExistsError
	if errors.As(err, &held) {
		nc := &jobs.NotCancellableError{Status: st}
		if h := held.Record; h.JobID != "" && h.JobID != id {
			nc.HeldBy = h.JobID
			nc.Status.State = jobs.StateRunning
			if h.Status == idempotency.StatusCompleted {
				nc.Status.State = jobs.StateSucceeded
			}
		} else {
			merge(&nc.Status, h, now)
		}
		return nc.Status, nc
	}
	if err != nil {
		return st, fmt.Errorf("state: cancel job %q: %w", id, err)
	}
	up := t.stateUpdate(&jobs.JobRow{ID: id, Kind: st.Kind, Batch: st.Batch, QueueURL: st.Queue}, jobs.StateCancelled, now).
		Set(expression.Name(attrReason), expression.Value(contract.ReasonCancelled)).
		Set(expression.Name(attrLastError), expression.Value(note)).
		Set(expression.Name(attrFinishedAt), expression.Value(now.UnixMilli())).
		Set(expression.Name(attrOpCancelled), expression.Value(true)).
		Remove(expression.Name(attrReceipt))
	if st.Batch != "" {
		err = t.memberDone(ctx, &jobs.JobRow{ID: id, Kind: st.Kind, Batch: st.Batch, QueueURL: st.Queue}, up, false)
	} else if err = t.updateJobIf(ctx, id, up, cancellable()); errors.Is(err, errCondition) {
		// A run recorded itself in between (jobs/state's Middleware alone): it is running.
		_, cur, rerr := t.jobItem(ctx, id)
		if rerr != nil {
			return st, rerr
		}
		return cur, &jobs.NotCancellableError{Status: cur}
	}
	if err != nil {
		return st, fmt.Errorf("state: job %q cancelled (it will not run), but its state was not recorded; cancel again: %w", id, err)
	}
	st.State, st.Since, st.FinishedAt, st.Reason, st.LastError, st.NextAttemptAt, st.Receipt = jobs.StateCancelled, now, now, contract.ReasonCancelled, note, time.Time{}, ""
	return st, nil
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// JobRetryNow implements jobs.StateStore: one UpdateItem on the condition that the job is
// retrying on the delivery whose receipt is given.
func (t *Table) JobRetryNow(ctx context.Context, id, receipt string, now time.Time) error {
	up := expression.Set(expression.Name(attrNextAttempt), expression.Value(now.UnixMilli())).Remove(expression.Name(attrReceipt))
	cond := expression.Name(attrState).Equal(expression.Value(string(jobs.StateRetrying))).
		And(expression.Name(attrReceipt).Equal(expression.Value(receipt)))
	err := t.updateJobIf(ctx, id, up, &cond)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: job %s no longer waits on the delivery its retry was recorded with", jobs.ErrNotWaiting, id)
	}
	return err
}

// stateUpdate is the update that moves a job's item to state at now, creating it if need be.
func (t *Table) stateUpdate(row *jobs.JobRow, state jobs.JobState, now time.Time) expression.UpdateBuilder {
	up := expression.Set(expression.Name(attrState), expression.Value(string(state))).
		Set(expression.Name(attrSince), expression.Value(now.UnixMilli())).
		Set(expression.Name(idempotency.AttrExpiration), expression.Value(now.Add(t.o.Expiry).Unix()))
	if row.Kind != "" {
		up = up.Set(expression.Name(attrKind), expression.Value(row.Kind)).
			Set(expression.Name(attrIdemKey), expression.IfNotExists(expression.Name(attrIdemKey), expression.Value(idempotency.JobKey(row))))
	}
	if row.QueueURL != "" {
		up = up.Set(expression.Name(attrQueue), expression.Value(row.QueueURL))
		if t.o.ListJobs {
			up = up.Set(expression.Name(contract.AttrListKey), expression.Value(contract.ListKey(row.QueueURL, string(state)))).
				Set(expression.Name(contract.AttrListAt), expression.Value(now.UnixMilli()))
		}
	}
	if row.Batch != "" {
		up = up.Set(expression.Name(attrBatch), expression.Value(row.Batch))
	}
	return up
}

func (t *Table) updateJob(ctx context.Context, id string, up expression.UpdateBuilder) error {
	return t.updateJobIf(ctx, id, up, nil)
}

// errCondition is updateJobIf's error when its condition fails.
var errCondition = errors.New("state: the job's item is not as the update requires")

// updateJobIf is updateJob on a condition (nil: none); it returns errCondition when the
// condition fails.
func (t *Table) updateJobIf(ctx context.Context, id string, up expression.UpdateBuilder, cond *expression.ConditionBuilder) error {
	b := expression.NewBuilder().WithUpdate(up)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return err
	}
	_, err = t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.name), Key: jobKey(id), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if cond != nil && errors.As(err, &ccf) {
		return fmt.Errorf("state: job %q: %w", id, errCondition)
	}
	if err != nil {
		return fmt.Errorf("state: record job %q: %w", id, err)
	}
	return nil
}

// notCancelled holds for a job item an operator has not cancelled (or no item).
func notCancelled() *expression.ConditionBuilder {
	c := expression.Name(attrOpCancelled).AttributeNotExists()
	return &c
}

// cancellable holds for a job item an operator may cancel: enqueued or retrying (or cancelled
// by an operator already).
func cancellable() *expression.ConditionBuilder {
	c := expression.Name(attrState).In(expression.Value(string(jobs.StateEnqueued)), expression.Value(string(jobs.StateRetrying))).
		Or(expression.Name(attrOpCancelled).AttributeExists())
	return &c
}
