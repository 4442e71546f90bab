package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// DynamoDBAPI is the part of the DynamoDB client the DynamoDB store calls.
type DynamoDBAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// DynamoDBOptions configures a DynamoDB store.
type DynamoDBOptions struct {
	// ConsistentRead makes Get strongly consistent. Default true.
	ConsistentRead bool
	// ListJobs keeps the jobs whose records carry their queue (Config.RecordJobs) listed as
	// running, then succeeded, in the state table's index (jobs/state Options.ListJobs, which
	// says what it costs).
	ListJobs bool
}

// DynamoDBStore is a Store in a DynamoDB table whose partition key is the string attribute "id".
// Enable the table's TTL on "expiration" so DynamoDB deletes old records; expiry is enforced by
// the store's conditions whether or not TTL has run.
//
// Costs: Claim is one conditional PutItem (a failed claim returns the existing record in the same
// call); Complete one UpdateItem; Delete one DeleteItem; Get one GetItem.
type DynamoDBStore struct {
	client DynamoDBAPI
	table  string
	opts   DynamoDBOptions
}

var (
	_ Store              = (*DynamoDBStore)(nil)
	_ TransactionalStore = (*DynamoDBStore)(nil)
	_ Canceller          = (*DynamoDBStore)(nil)
)

// NewDynamoDBStore returns a store in table, called through client (usually a *dynamodb.Client).
func NewDynamoDBStore(client DynamoDBAPI, table string, optFns ...func(*DynamoDBOptions)) *DynamoDBStore {
	opts := DynamoDBOptions{ConsistentRead: true}
	for _, fn := range optFns {
		fn(&opts)
	}
	return &DynamoDBStore{client: client, table: table, opts: opts}
}

// Table returns the table name.
func (s *DynamoDBStore) Table() string { return s.table }

// Claim implements Store: one PutItem whose condition admits an absent key, an expired record or
// an INPROGRESS claim whose lease has ended, with ReturnValuesOnConditionCheckFailure=ALL_OLD.
func (s *DynamoDBStore) Claim(ctx context.Context, rec *Record, now time.Time) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := checkWrite(rec, StatusInProgress); err != nil {
		return err
	}
	var attempts atomic.Int32
	holder, err := s.putUnlessHeld(ctx, "claim", rec, notLive(now), countAttempts(&attempts))
	if holder == nil || err != nil {
		return err
	}
	// The SDK retried a request whose first attempt was applied (its response was lost): the
	// holder is this claim.
	if attempts.Load() > 1 && holder.Status == StatusInProgress && holder.LeaseEnd.Equal(rec.LeaseEnd) &&
		holder.Validation == rec.Validation {
		return nil
	}
	return &AlreadyExistsError{Record: holder}
}

// notLive holds when no live record holds the key at now (see Record.Live).
func notLive(now time.Time) expression.ConditionBuilder {
	return expression.Name(AttrID).AttributeNotExists().
		Or(expression.Name(AttrExpiration).LessThanEqual(expression.Value(now.Unix()))).
		Or(expression.Name(AttrStatus).Equal(expression.Value(string(StatusInProgress))).
			And(expression.Name(AttrInProgressExpiration).LessThanEqual(expression.Value(epochMillis(now)))))
}

// Cancel implements Canceller: one PutItem whose condition is Claim's or a cancellation in
// place, with ReturnValuesOnConditionCheckFailure=ALL_OLD.
func (s *DynamoDBStore) Cancel(ctx context.Context, rec *Record, now time.Time) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := checkWrite(rec, StatusCancelled); err != nil {
		return err
	}
	cond := notLive(now).Or(expression.Name(AttrStatus).Equal(expression.Value(string(StatusCancelled))))
	holder, err := s.putUnlessHeld(ctx, "cancel", rec, cond)
	if holder == nil || err != nil {
		return err
	}
	return &AlreadyExistsError{Record: holder}
}

// putUnlessHeld puts rec on condition cond. When cond fails it returns the record that holds the
// key (nil after a put).
func (s *DynamoDBStore) putUnlessHeld(ctx context.Context, op string, rec *Record, cond expression.ConditionBuilder, optFns ...func(*dynamodb.Options)) (*Record, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("idempotency: build %s condition: %w", op, err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                marshalRecord(rec, s.opts.ListJobs),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, optFns...)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &ccf):
		return nil, fmt.Errorf("idempotency: %s %q: %w", op, rec.Key, err)
	}
	return s.holder(ctx, rec.Key, ccf)
}

// holder is the record a failed condition returned, or, from an endpoint that returns none, the
// one stored now.
func (s *DynamoDBStore) holder(ctx context.Context, key string, ccf *types.ConditionalCheckFailedException) (*Record, error) {
	if len(ccf.Item) > 0 {
		return unmarshalRecord(ccf.Item)
	}
	rec, err := s.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %q failed its condition; read the holder: %w", key, err)
	}
	return rec, nil
}

// Get implements Store.
func (s *DynamoDBStore) Get(ctx context.Context, key string) (*Record, error) {
	if err := s.checkKeyed(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(key),
		ConsistentRead: aws.Bool(s.opts.ConsistentRead),
	})
	if err != nil {
		return nil, fmt.Errorf("idempotency: get %q: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return unmarshalRecord(out.Item)
}

// Complete implements Store: one UpdateItem conditioned on the claim.
func (s *DynamoDBStore) Complete(ctx context.Context, rec *Record, leaseEnd time.Time) error {
	in, err := s.completeUpdate(rec, leaseEnd)
	if err != nil {
		return err
	}
	// An item completed by this claim: an earlier attempt of this request completed it.
	done := func(item map[string]types.AttributeValue) bool { return completedBy(item, leaseEnd) }
	return onClaim(s.update(ctx, in), done, "complete", rec.Key)
}

// update makes u, the old item returned should its condition fail.
func (s *DynamoDBStore) update(ctx context.Context, u *types.Update) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           u.TableName,
		Key:                                 u.Key,
		UpdateExpression:                    u.UpdateExpression,
		ConditionExpression:                 u.ConditionExpression,
		ExpressionAttributeNames:            u.ExpressionAttributeNames,
		ExpressionAttributeValues:           u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return err
}

// onClaim reads the answer to a write conditioned on a claim (claimCondition): nil when written,
// or when the item that failed the condition shows the write made already (done); ErrLeaseLost
// when the claim is gone; otherwise the call's error, for op of key.
func onClaim(err error, done func(item map[string]types.AttributeValue) bool, op, key string) error {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		if done(ccf.Item) {
			return nil
		}
		return ErrLeaseLost
	default:
		return fmt.Errorf("idempotency: %s %q: %w", op, key, err)
	}
}

// completedBy reports whether item is a COMPLETED record of the claim whose lease ends at leaseEnd.
func completedBy(item map[string]types.AttributeValue, leaseEnd time.Time) bool {
	if len(item) == 0 {
		return false
	}
	old, err := unmarshalRecord(item)
	return err == nil && old.Status == StatusCompleted && old.LeaseEnd.Equal(leaseEnd)
}

// completeUpdate builds the update that turns the claim ending at leaseEnd into rec.
func (s *DynamoDBStore) completeUpdate(rec *Record, leaseEnd time.Time) (*types.Update, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := checkWrite(rec, StatusCompleted); err != nil {
		return nil, err
	}
	update := expression.Set(expression.Name(AttrStatus), expression.Value(string(StatusCompleted))).
		Set(expression.Name(AttrExpiration), expression.Value(rec.ExpiresAt.Unix()))
	if rec.Validation != "" {
		update = update.Set(expression.Name(AttrValidation), expression.Value(rec.Validation))
	} else {
		update = update.Remove(expression.Name(AttrValidation))
	}
	if rec.Data != nil {
		update = update.Set(expression.Name(AttrData), expression.Value(dataValue(rec.Data)))
	} else {
		update = update.Remove(expression.Name(AttrData))
	}
	if !rec.FinishedAt.IsZero() {
		update = update.Set(expression.Name(AttrFinishedAt), expression.Value(rec.FinishedAt.UnixMilli()))
		if rec.Queue != "" && s.opts.ListJobs {
			// The job's succeeded state in the state table's index (jobs/state Table.List).
			update = update.Set(expression.Name(contract.AttrListKey), expression.Value(contract.ListKey(rec.Queue, string(jobs.StateSucceeded)))).
				Set(expression.Name(contract.AttrListAt), expression.Value(rec.FinishedAt.UnixMilli()))
		}
	}
	return s.claimUpdate(rec.Key, update, leaseEnd, "complete")
}

// claimUpdate builds update of key's record conditioned on the claim whose lease ends at leaseEnd.
func (s *DynamoDBStore) claimUpdate(key string, update expression.UpdateBuilder, leaseEnd time.Time, op string) (*types.Update, error) {
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(claimCondition(leaseEnd)).Build()
	if err != nil {
		return nil, fmt.Errorf("idempotency: build %s update: %w", op, err)
	}
	return &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(key),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// Delete implements Store: one DeleteItem conditioned on the claim.
func (s *DynamoDBStore) Delete(ctx context.Context, key string, leaseEnd time.Time) error {
	if err := s.checkKeyed(key); err != nil {
		return err
	}
	expr, err := expression.NewBuilder().WithCondition(claimCondition(leaseEnd)).Build()
	if err != nil {
		return fmt.Errorf("idempotency: build delete condition: %w", err)
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 keyOf(key),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	// No record: nothing left to release.
	gone := func(item map[string]types.AttributeValue) bool { return len(item) == 0 }
	return onClaim(err, gone, "delete", key)
}

// Renew implements Renewer: one UpdateItem conditioned on the claim.
func (s *DynamoDBStore) Renew(ctx context.Context, key string, leaseEnd, newEnd, expiresAt time.Time) error {
	if err := s.checkKeyed(key); err != nil {
		return err
	}
	update := expression.Set(expression.Name(AttrInProgressExpiration), expression.Value(epochMillis(newEnd))).
		Set(expression.Name(AttrExpiration), expression.Value(expiresAt.Unix()))
	in, err := s.claimUpdate(key, update, leaseEnd, "renew")
	if err != nil {
		return err
	}
	// A claim whose lease ends at newEnd: an earlier attempt of this request renewed it.
	renewed := func(item map[string]types.AttributeValue) bool {
		old, err := unmarshalRecord(item)
		return len(item) > 0 && err == nil && old.Status == StatusInProgress && old.LeaseEnd.Equal(newEnd)
	}
	return onClaim(s.update(ctx, in), renewed, "renew", key)
}

// checkKeyed is check, then the key's own check.
func (s *DynamoDBStore) checkKeyed(key string) error {
	if err := s.check(); err != nil {
		return err
	}
	return checkKey(key)
}

func (s *DynamoDBStore) check() error {
	if s.client == nil {
		return errors.New("idempotency: DynamoDB store has no client")
	}
	if s.table == "" {
		return errors.New("idempotency: DynamoDB store has no table name")
	}
	return nil
}

// claimCondition holds when the key is the INPROGRESS claim whose lease ends at leaseEnd.
func claimCondition(leaseEnd time.Time) expression.ConditionBuilder {
	return expression.Name(AttrStatus).Equal(expression.Value(string(StatusInProgress))).
		And(expression.Name(AttrInProgressExpiration).Equal(expression.Value(epochMillis(leaseEnd))))
}

func keyOf(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrID: &types.AttributeValueMemberS{Value: key}}
}

// dataValue stores data as a string when it is UTF-8 (as Powertools stores JSON), else as binary.
func dataValue(data []byte) types.AttributeValue {
	if utf8.Valid(data) {
		return &types.AttributeValueMemberS{Value: string(data)}
	}
	return &types.AttributeValueMemberB{Value: data}
}

func marshalRecord(rec *Record, listJobs bool) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		AttrID:                   &types.AttributeValueMemberS{Value: rec.Key},
		AttrStatus:               &types.AttributeValueMemberS{Value: string(rec.Status)},
		AttrExpiration:           &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt.Unix(), 10)},
		AttrInProgressExpiration: &types.AttributeValueMemberN{Value: epochMillis(rec.LeaseEnd).Value},
	}
	if rec.Validation != "" {
		item[AttrValidation] = &types.AttributeValueMemberS{Value: rec.Validation}
	}
	if rec.Data != nil {
		item[AttrData] = dataValue(rec.Data)
	}
	if rec.JobID != "" {
		item[AttrJobID] = &types.AttributeValueMemberS{Value: rec.JobID}
		item[AttrAttempt] = &types.AttributeValueMemberN{Value: strconv.Itoa(rec.Attempt)}
		item[AttrStartedAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.StartedAt.UnixMilli(), 10)}
		if rec.Queue != "" {
			item[AttrQueue] = &types.AttributeValueMemberS{Value: rec.Queue}
		}
		if rec.Kind != "" {
			item[AttrKind] = &types.AttributeValueMemberS{Value: rec.Kind}
		}
		if rec.Queue != "" && rec.Status == StatusInProgress && listJobs {
			// The job's running state in the state table's index (jobs/state Table.List).
			item[contract.AttrListKey] = &types.AttributeValueMemberS{Value: contract.ListKey(rec.Queue, string(jobs.StateRunning))}
			item[contract.AttrListAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.StartedAt.UnixMilli(), 10)}
		}
	}
	return item
}

// RecordFromItem reads a record from a DynamoDB item of the idempotency table (for tools that
// read the table, such as jobs/state's job status).
func RecordFromItem(item map[string]types.AttributeValue) (*Record, error) {
	return unmarshalRecord(item)
}

func unmarshalRecord(item map[string]types.AttributeValue) (*Record, error) {
	rec := &Record{}
	str := func(name string) (string, error) {
		switch v := item[name].(type) {
		case nil:
			return "", nil
		case *types.AttributeValueMemberS:
			return v.Value, nil
		default:
			return "", fmt.Errorf("idempotency: attribute %q has type %T, want a string", name, v)
		}
	}
	num := func(name string) (int64, error) {
		switch v := item[name].(type) {
		case nil:
			return 0, nil
		case *types.AttributeValueMemberN:
			if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
				return n, nil
			}
			f, err := strconv.ParseFloat(v.Value, 64)
			if err != nil {
				return 0, fmt.Errorf("idempotency: attribute %q: %w", name, err)
			}
			return int64(f), nil
		default:
			return 0, fmt.Errorf("idempotency: attribute %q has type %T, want a number", name, v)
		}
	}
	var err error
	var status string
	var exp int64
	if rec.Key, err = str(AttrID); err != nil {
		return nil, err
	}
	if status, err = str(AttrStatus); err != nil {
		return nil, err
	}
	rec.Status = Status(status)
	if exp, err = num(AttrExpiration); err != nil {
		return nil, err
	}
	rec.ExpiresAt = time.Unix(exp, 0).UTC()
	switch v := item[AttrInProgressExpiration].(type) {
	case nil:
		rec.LeaseEnd = time.UnixMilli(0).UTC()
	case *types.AttributeValueMemberN:
		t, err := parseEpochMillis(v.Value)
		if err != nil {
			return nil, fmt.Errorf("idempotency: attribute %q: %w", AttrInProgressExpiration, err)
		}
		rec.LeaseEnd = t
	default:
		return nil, fmt.Errorf("idempotency: attribute %q has type %T, want a number", AttrInProgressExpiration, v)
	}
	if rec.Validation, err = str(AttrValidation); err != nil {
		return nil, err
	}
	switch v := item[AttrData].(type) {
	case nil:
	case *types.AttributeValueMemberS:
		rec.Data = []byte(v.Value)
	case *types.AttributeValueMemberB:
		rec.Data = v.Value
	default:
		return nil, fmt.Errorf("idempotency: attribute %q has type %T, want a string or binary", AttrData, v)
	}
	if rec.JobID, err = str(AttrJobID); err != nil {
		return nil, err
	}
	if rec.Queue, err = str(AttrQueue); err != nil {
		return nil, err
	}
	if rec.Kind, err = str(AttrKind); err != nil {
		return nil, err
	}
	var attempt, started, finished int64
	if attempt, err = num(AttrAttempt); err != nil {
		return nil, err
	}
	rec.Attempt = int(attempt)
	if started, err = num(AttrStartedAt); err != nil {
		return nil, err
	}
	if finished, err = num(AttrFinishedAt); err != nil {
		return nil, err
	}
	if started > 0 {
		rec.StartedAt = time.UnixMilli(started).UTC()
	}
	if finished > 0 {
		rec.FinishedAt = time.UnixMilli(finished).UTC()
	}
	return rec, nil
}

// epochMillis returns t as a DynamoDB number of epoch milliseconds, with the sub-millisecond part
// as a fraction ("1795262400123.456789"), so that it keeps t to the nanosecond.
func epochMillis(t time.Time) types.AttributeValueMemberN {
	ns := t.UnixNano()
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	ms, frac := ns/1e6, ns%1e6
	if frac == 0 {
		return types.AttributeValueMemberN{Value: sign + strconv.FormatInt(ms, 10)}
	}
	return types.AttributeValueMemberN{Value: sign + strings.TrimRight(fmt.Sprintf("%d.%06d", ms, frac), "0")}
}

// parseEpochMillis reads a number of epoch milliseconds, with or without a fraction (digits
// beyond the nanosecond are dropped), or in exponent form.
func parseEpochMillis(s string) (time.Time, error) {
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	ms, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || strings.ContainsAny(whole+frac, "eE+-") {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return time.Time{}, ferr
		}
		return time.Unix(0, int64(f*1e6)).UTC(), nil
	}
	var ns int64
	if frac != "" {
		if ns, err = strconv.ParseInt((frac + "000000")[:6], 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	total := ms*1e6 + ns
	if neg {
		total = -total
	}
	return time.Unix(0, total).UTC(), nil
}

// countAttempts counts the attempts (first try and retries) of one request.
func countAttempts(n *atomic.Int32) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("jobkitIdempotencyAttempts",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}
