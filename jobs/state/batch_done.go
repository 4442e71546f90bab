package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

var shardCache sync.Map // batch id → its shard count (never changes)

// batchShards returns a batch's shard count, read once per process.
func (t *Table) batchShards(ctx context.Context, batch string) (int, error) {
	if v, ok := shardCache.Load(t.name + "\x00" + batch); ok {
		return v.(int), nil
	}
	item, err := t.get(ctx, metaKey(batch))
	if err != nil {
		return 0, err
	}
	shards := int(num(item, attrShards))
	if item == nil || shards < 1 {
		return 0, fmt.Errorf("%w: %q", ErrBatchNotFound, batch)
	}
	shardCache.Store(t.name+"\x00"+batch, shards)
	return shards, nil
}

// memberDone counts a member's end in its batch once (succeeded or dead), with up applied to its
// job item in the same transaction, then advances the batch.
func (t *Table) memberDone(ctx context.Context, row *jobs.JobRow, up expression.UpdateBuilder, succeeded bool) error {
	shards, err := t.batchShards(ctx, row.Batch)
	if err != nil {
		return err
	}
	k := shardOf(row.ID, shards)
	outcome, counter := "dead", attrDead
	if succeeded {
		outcome, counter = "succeeded", attrSucceeded
	}
	jexpr, err := expression.NewBuilder().
		WithUpdate(up.Set(expression.Name(attrBatchCounted), expression.Value(outcome))).
		WithCondition(expression.AttributeNotExists(expression.Name(attrBatchCounted))).Build()
	if err != nil {
		return err
	}
	sexpr, err := expression.NewBuilder().WithUpdate(
		expression.Add(expression.Name(attrPending), expression.Value(-1)).Add(expression.Name(counter), expression.Value(1))).Build()
	if err != nil {
		return err
	}
	_, err = t.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: jobKey(row.ID), UpdateExpression: jexpr.Update(),
			ConditionExpression: jexpr.Condition(), ExpressionAttributeNames: jexpr.Names(), ExpressionAttributeValues: jexpr.Values(),
		}},
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: key(shardKey(row.Batch, k)), UpdateExpression: sexpr.Update(),
			ExpressionAttributeNames: sexpr.Names(), ExpressionAttributeValues: sexpr.Values(),
		}},
	}})
	if err != nil && !cancelled(err, 0) { // cancelled on item 0: counted before (a duplicate delivery)
		return fmt.Errorf("state: count job %q in batch %q: %w", row.ID, row.Batch, err)
	}
	if err := t.closeShard(ctx, row.Batch, k); err != nil {
		return err
	}
	return t.maybeCallback(ctx, row.Batch, shards, nil)
}

// closeShard closes shard k of batch once it has no pending member and the batch is sealed,
// lowering the batch's count of open shards in the same transaction.
func (t *Table) closeShard(ctx context.Context, batch string, k int) error {
	sh, err := t.get(ctx, shardKey(batch, k))
	if err != nil {
		return err
	}
	if num(sh, attrPending) > 0 || boolean(sh, attrClosed) {
		return nil
	}
	sexpr, err := expression.NewBuilder().
		WithUpdate(expression.Set(expression.Name(attrClosed), expression.Value(true))).
		WithCondition(expression.AttributeNotExists(expression.Name(attrClosed)).And(
			expression.AttributeNotExists(expression.Name(attrPending)).Or(expression.Name(attrPending).Equal(expression.Value(0))))).Build()
	if err != nil {
		return err
	}
	mexpr, err := expression.NewBuilder().
		WithUpdate(expression.Add(expression.Name(attrShardsLeft), expression.Value(-1))).
		WithCondition(expression.Name(attrSealed).Equal(expression.Value(true))).Build()
	if err != nil {
		return err
	}
	_, err = t.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: key(shardKey(batch, k)), UpdateExpression: sexpr.Update(),
			ConditionExpression: sexpr.Condition(), ExpressionAttributeNames: sexpr.Names(), ExpressionAttributeValues: sexpr.Values(),
		}},
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: key(metaKey(batch)), UpdateExpression: mexpr.Update(),
			ConditionExpression: mexpr.Condition(), ExpressionAttributeNames: mexpr.Names(), ExpressionAttributeValues: mexpr.Values(),
		}},
	}})
	if err != nil && !cancelled(err, 0) && !cancelled(err, 1) { // closed by another run, or not sealed yet
		return fmt.Errorf("state: close shard %d of batch %q: %w", k, batch, err)
	}
	return nil
}

// maybeCallback sends the batch's callback once no shard is open: it takes the callback lease
// (a conditional write), sends the callback job (through client when set, else Options.SQS) and
// marks it sent.
func (t *Table) maybeCallback(ctx context.Context, batch string, shards int, client *jobs.Client) error {
	meta, err := t.get(ctx, metaKey(batch))
	if err != nil {
		return err
	}
	if meta == nil {
		return fmt.Errorf("%w: %q", ErrBatchNotFound, batch)
	}
	if num(meta, attrShardsLeft) > 0 || num(meta, attrCbSent) > 0 {
		return nil
	}
	now := t.o.Now()
	until := now.Add(CallbackLease)
	cond := expression.Name(attrShardsLeft).Equal(expression.Value(0)).
		And(expression.AttributeNotExists(expression.Name(attrCbSent))).
		And(expression.AttributeNotExists(expression.Name(attrCbLease)).Or(expression.Name(attrCbLease).LessThanEqual(expression.Value(now.UnixMilli()))))
	err = t.setMetaIf(ctx, batch, cond, attrCbLease, until.UnixMilli())
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if num(ccf.Item, attrCbSent) > 0 {
			return nil
		}
		return &CallbackPendingError{Batch: batch, Until: msTime(ccf.Item, attrCbLease)}
	}
	if err != nil {
		return fmt.Errorf("state: take the callback lease of batch %q: %w", batch, err)
	}
	info, err := t.sum(ctx, batch, shards)
	if err != nil {
		return err
	}
	if err := t.sendCallback(ctx, batch, meta, info, now, client); err != nil {
		return err
	}
	if info.Dead > 0 && str(meta, attrFailKind) != "" && num(meta, attrExpiredAt) == 0 {
		res := BatchResult{BatchID: batch, Total: info.Total, Succeeded: info.Succeeded, Dead: info.Dead}
		if err := t.sendBatchJob(ctx, meta, batchJob{id: FailureID(batch), kind: attrFailKind, args: attrFailArgs, queue: attrFailQueue}, res, now, client); err != nil {
			return err
		}
	}
	mark, _ := expression.NewBuilder().WithUpdate(expression.Set(expression.Name(attrCbSent), expression.Value(t.o.Now().UnixMilli()))).Build()
	_, err = t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.name), Key: key(metaKey(batch)), UpdateExpression: mark.Update(),
		ExpressionAttributeNames: mark.Names(), ExpressionAttributeValues: mark.Values(),
	})
	if err != nil {
		return fmt.Errorf("state: mark the callback of batch %q sent: %w", batch, err)
	}
	return nil
}

// batchJob names a job a batch sends (its callback, its failure callback) by the meta attributes
// that hold its kind, args and queue.
type batchJob struct{ id, kind, args, queue string }

// sendCallback sends the batch's callback job, its args given the batch's counts.
func (t *Table) sendCallback(ctx context.Context, batch string, meta map[string]types.AttributeValue, info BatchInfo, now time.Time, client *jobs.Client) error {
	res := BatchResult{BatchID: batch, Total: info.Total, Succeeded: info.Succeeded, Dead: info.Dead}
	return t.sendBatchJob(ctx, meta, batchJob{id: CallbackID(batch), kind: attrCbKind, args: attrCbArgs, queue: attrCbQueue}, res, now, client)
}

// sendBatchJob sends one of the batch's jobs with res's members set in its args.
func (t *Table) sendBatchJob(ctx context.Context, meta map[string]types.AttributeValue, j batchJob, res BatchResult, now time.Time, client *jobs.Client) error {
	batch := res.BatchID
	if t.o.SQS == nil && client == nil {
		return fmt.Errorf("state: batch %q is done but the table has no SQS client to send its callback (Options.SQS)", batch)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(str(meta, j.args)), &args); err != nil || args == nil {
		args = map[string]json.RawMessage{}
	}
	resJSON, _ := json.Marshal(res)
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(resJSON, &fields)
	for k, v := range fields {
		args[k] = v
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	id, kind, queue := j.id, str(meta, j.kind), str(meta, j.queue)
	if client != nil {
		_, err := client.Enqueue(ctx, rawJob{kind: kind, args: raw}, &jobs.EnqueueOpts{ID: id, Queue: queue, GroupID: str(meta, attrCbGroup)})
		if err != nil {
			return fmt.Errorf("state: send %s of batch %q: %w", id, batch, err)
		}
		return nil
	}
	body, err := json.Marshal(&jobs.Envelope{V: jobs.EnvelopeVersion, ID: id, Kind: kind, Args: raw, EnqueuedAt: now.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return err
	}
	if err := t.JobsEnqueued(ctx, []jobs.PreparedJob{{ID: id, Kind: kind, QueueURL: queue, EnqueuedAt: now}}); err != nil {
		return err
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(string(body))}
	if g := str(meta, attrCbGroup); g != "" {
		in.MessageGroupId = aws.String(g)
		if awsarn.IsFIFO(queue) {
			in.MessageDeduplicationId = aws.String(id)
		}
	}
	if _, err := t.o.SQS.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("state: send %s of batch %q: %w", id, batch, err)
	}
	return nil
}

// rawJob is a job whose args are JSON already (a batch's callback).
type rawJob struct {
	kind string
	args json.RawMessage
}

func (j rawJob) Kind() string                 { return j.kind }
func (j rawJob) MarshalJSON() ([]byte, error) { return j.args, nil }

// sum adds up a batch's shards.
func (t *Table) sum(ctx context.Context, batch string, shards int) (BatchInfo, error) {
	info := BatchInfo{ID: batch, Shards: shards}
	for k := 0; k < shards; k++ {
		sh, err := t.get(ctx, shardKey(batch, k))
		if err != nil {
			return info, err
		}
		info.Total += int(num(sh, attrAdded))
		info.Pending += int(num(sh, attrPending))
		info.Succeeded += int(num(sh, attrSucceeded))
		info.Dead += int(num(sh, attrDead))
	}
	return info, nil
}

// BatchStatus returns a batch's state: 1 + Shards reads.
func (t *Table) BatchStatus(ctx context.Context, id string) (BatchInfo, error) {
	if !validBatchID(id) {
		return BatchInfo{}, fmt.Errorf("%w: %q", ErrInvalidBatch, id)
	}
	meta, err := t.get(ctx, metaKey(id))
	if err != nil {
		return BatchInfo{}, err
	}
	if meta == nil {
		return BatchInfo{}, fmt.Errorf("%w: %q", ErrBatchNotFound, id)
	}
	info, err := t.sum(ctx, id, int(num(meta, attrShards)))
	if err != nil {
		return info, err
	}
	info.Sealed = boolean(meta, attrSealed)
	info.CallbackKind, info.CallbackID = str(meta, attrCbKind), CallbackID(id)
	info.CallbackSentAt, info.CreatedAt = msTime(meta, attrCbSent), msTime(meta, attrCreatedAt)
	info.Deadline, info.ExpiredAt = msTime(meta, attrDeadline), msTime(meta, attrExpiredAt)
	return info, nil
}

// setMetaIf sets attribute name of batch's meta item to v if cond holds. A failed condition is
// the *types.ConditionalCheckFailedException, with the item as it was.
func (t *Table) setMetaIf(ctx context.Context, batch string, cond expression.ConditionBuilder, name string, v any) error {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(expression.Set(expression.Name(name), expression.Value(v))).Build()
	if err != nil {
		return err
	}
	_, err = t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(t.name), Key: key(metaKey(batch)), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return err
}
