package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// BatchDeadlineKind is the kind of a batch's deadline job (BatchOpts.Deadline).
const BatchDeadlineKind = "jobkit.batch_deadline"

// FailureID returns the id of a batch's failure callback job (BatchOpts.OnFailure).
func FailureID(batch string) string { return batch + ".failure" }

// DeadlineID returns the id of a batch's deadline job.
func DeadlineID(batch string) string { return batch + ".deadline" }

// BatchDeadline is the args of a batch's deadline job.
type BatchDeadline struct {
	BatchID string `json:"batch_id"`
}

// Kind implements jobs.JobArgs.
func (BatchDeadline) Kind() string { return BatchDeadlineKind }

// failureAttrs checks opts' failure callback and deadline and puts them on the batch item.
func failureAttrs(item map[string]types.AttributeValue, client *jobs.Client, opts BatchOpts, now time.Time) error {
	if opts.Deadline < 0 {
		return fmt.Errorf("state: OpenBatch: negative Deadline %s", opts.Deadline)
	}
	if opts.Deadline > 0 {
		item[attrDeadline] = ms(now.Add(opts.Deadline))
	}
	if opts.OnFailure == nil {
		return nil
	}
	kind := opts.OnFailure.Kind()
	if kind == "" {
		return errors.New("state: OpenBatch: the failure callback (BatchOpts.OnFailure) has no kind")
	}
	queue := opts.Queue
	if queue == "" {
		queue = client.QueueFor(kind)
	}
	if queue == "" {
		return fmt.Errorf("state: OpenBatch: failure callback: %w", jobs.ErrNoQueue)
	}
	if awsarn.IsFIFO(queue) && opts.GroupID == "" {
		return fmt.Errorf("state: OpenBatch: failure callback: %w", jobs.ErrGroupRequired)
	}
	args, err := json.Marshal(opts.OnFailure)
	if err != nil {
		return fmt.Errorf("state: OpenBatch: %w: %w", jobs.ErrEncodeArgs, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return fmt.Errorf("state: OpenBatch: the failure callback's args must encode as a JSON object: %s", args)
	}
	item[attrFailKind], item[attrFailArgs], item[attrFailQueue] = s(kind), s(string(args)), s(queue)
	return nil
}

// armDeadline enqueues the batch's deadline job, delayed by opts.Deadline, on the callback's
// queue. If it cannot be sent the batch is deleted again, so that OpenBatch fails whole.
func (t *Table) armDeadline(ctx context.Context, client *jobs.Client, batch, queue string, opts BatchOpts) error {
	if opts.Deadline <= 0 {
		return nil
	}
	_, err := client.Enqueue(ctx, BatchDeadline{BatchID: batch}, &jobs.EnqueueOpts{
		ID: DeadlineID(batch), Queue: queue, GroupID: opts.GroupID, Delay: opts.Deadline,
	})
	if err == nil {
		return nil
	}
	_, _ = t.db.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{TableName: aws.String(t.name), Key: key(metaKey(batch))})
	return fmt.Errorf("state: open batch %q: send its deadline job: %w", batch, err)
}

// DeadlineWorker returns the worker of batches' deadline jobs (BatchDeadlineKind): register it
// with jobs.AddWorker in the function that consumes the callbacks' queue. When a batch's deadline
// passes with members pending and its callback unsent, it sends the batch's failure callback
// (OnFailure, with pending and timed_out set) and marks the batch expired; otherwise it does
// nothing. client sends the failure callback (nil: the table's Options.SQS).
func (t *Table) DeadlineWorker(client *jobs.Client) jobs.Worker[BatchDeadline] {
	return jobs.WorkFunc[BatchDeadline](func(ctx context.Context, job *jobs.Job[BatchDeadline]) error {
		return t.expireBatch(ctx, job.Args.BatchID, client)
	})
}

// expireBatch ends batch's deadline: the failure callback is sent first (its id is fixed, so a
// second send is the same job), then the batch is marked expired, so that a deadline job run twice
// or retried after a failed mark sends nothing the callback's idempotency does not catch.
func (t *Table) expireBatch(ctx context.Context, batch string, client *jobs.Client) error {
	meta, err := t.get(ctx, metaKey(batch))
	if err != nil {
		return err
	}
	if meta == nil || num(meta, attrCbSent) > 0 || num(meta, attrExpiredAt) > 0 {
		return nil // gone (expired by TTL), done, or expired already
	}
	info, err := t.sum(ctx, batch, int(num(meta, attrShards)))
	if err != nil {
		return err
	}
	if boolean(meta, attrSealed) && info.Pending == 0 {
		return nil // every member ended: the callback is being sent
	}
	now := t.o.Now()
	if str(meta, attrFailKind) != "" {
		res := BatchResult{BatchID: batch, Total: info.Total, Succeeded: info.Succeeded, Dead: info.Dead, Pending: info.Pending, TimedOut: true}
		if err := t.sendBatchJob(ctx, meta, batchJob{id: FailureID(batch), kind: attrFailKind, args: attrFailArgs, queue: attrFailQueue}, res, now, client); err != nil {
			return err
		}
	}
	cond := expression.AttributeNotExists(expression.Name(attrExpiredAt)).And(expression.AttributeNotExists(expression.Name(attrCbSent)))
	err = t.setMetaIf(ctx, batch, cond, attrExpiredAt, now.UnixMilli())
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("state: mark batch %q expired: %w", batch, err)
	}
	return nil
}
