package samplejobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

// KindPostLedger is PostLedger's kind.
const KindPostLedger = "ledger.post"

// Attribute names of a ledger item (one per account).
const (
	LedgerAccountAttr  = "account"      // partition key, string
	LedgerBalanceAttr  = "balance"      // number: sum of the posted amounts, in cents
	LedgerPostingsAttr = "postings"     // number: postings applied
	LedgerLastAttr     = "last_posting" // id of the posting applied last
	LedgerUpdatedAttr  = "updated_at"   // RFC 3339 time of the last posting
	LedgerAppliedAttr  = "applied"      // list of the posting ids applied, in the order applied
	LedgerLastSeqAttr  = "last_seq"     // number: Seq of the sequenced posting applied last
)

// PostLedger applies one posting to an account's balance. Enqueue it on the FIFO Ledger queue
// with the account as message group (see GroupID) so that an account's postings apply one at a
// time, in order, while accounts proceed in parallel.
//
// A producer that numbers an account's postings sets Seq (1, 2, 3, ...): the worker then refuses
// a posting whose Seq is not above the last one applied to the account (an *OutOfOrderError,
// dead-lettered), so the ledger never applies an account's postings out of order, whatever the
// queue does. Numbers may be skipped (a posting dead-lettered on the way). Postings without Seq
// (0) are not checked.
type PostLedger struct {
	Account     string `json:"account"`
	PostingID   string `json:"posting_id"`
	AmountCents int64  `json:"amount_cents"`
	Seq         int64  `json:"seq,omitempty"`
}

// OutOfOrderError reports a sequenced posting that arrived after a later one of its account had
// been applied. Retrying cannot fix that: the worker cancels the job with it.
type OutOfOrderError struct {
	Account   string
	PostingID string
	Seq       int64 // the posting's
	LastSeq   int64 // the account's last applied
}

func (e *OutOfOrderError) Error() string {
	return fmt.Sprintf("samplejobs: posting %s (seq %d) of account %s is out of order: seq %d is already applied",
		e.PostingID, e.Seq, e.Account, e.LastSeq)
}

// Kind implements jobs.JobArgs.
func (PostLedger) Kind() string { return KindPostLedger }

// GroupID is the FIFO message group to enqueue p with: its account.
func (p PostLedger) GroupID() string { return p.Account }

// LedgerWorker runs PostLedger jobs. It must run behind idempotency.Middleware with a DynamoDB
// store: the posting and the job's COMPLETED record are written in one transaction
// (idempotency.TransactWrite), so a posting applies exactly once however often it is delivered.
type LedgerWorker struct {
	Table string // the ledger table (partition key "account")
	Now   func() time.Time
}

// Work implements jobs.Worker.
func (w *LedgerWorker) Work(ctx context.Context, job *jobs.Job[PostLedger]) error {
	p := job.Args
	if p.Account == "" || p.PostingID == "" {
		return jobs.Cancel(errors.New("samplejobs: a posting needs an account and a posting_id"))
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	update := expression.
		Set(expression.Name(LedgerBalanceAttr), expression.Plus(
			expression.IfNotExists(expression.Name(LedgerBalanceAttr), expression.Value(0)), expression.Value(p.AmountCents))).
		Set(expression.Name(LedgerPostingsAttr), expression.Plus(
			expression.IfNotExists(expression.Name(LedgerPostingsAttr), expression.Value(0)), expression.Value(1))).
		Set(expression.Name(LedgerLastAttr), expression.Value(p.PostingID)).
		Set(expression.Name(LedgerUpdatedAttr), expression.Value(now().UTC().Format(time.RFC3339Nano))).
		Set(expression.Name(LedgerAppliedAttr), expression.ListAppend(
			expression.IfNotExists(expression.Name(LedgerAppliedAttr), expression.Value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}})),
			expression.Value(&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: p.PostingID}}})))
	builder := expression.NewBuilder()
	if p.Seq > 0 {
		update = update.Set(expression.Name(LedgerLastSeqAttr), expression.Value(p.Seq))
		builder = builder.WithCondition(expression.Name(LedgerLastSeqAttr).AttributeNotExists().
			Or(expression.Name(LedgerLastSeqAttr).LessThan(expression.Value(p.Seq))))
	}
	expr, err := builder.WithUpdate(update).Build()
	if err != nil {
		return jobs.Cancel(fmt.Errorf("samplejobs: ledger update: %w", err))
	}
	item := types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(w.Table),
		Key:                       map[string]types.AttributeValue{LedgerAccountAttr: &types.AttributeValueMemberS{Value: p.Account}},
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		// On an out-of-order posting, read the account's last_seq back for the error.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
	err = idempotency.TransactWrite(ctx, []types.TransactWriteItem{item}, nil)
	if errors.Is(err, idempotency.ErrNoClaim) {
		// Wiring error: without the middleware the posting could apply twice.
		return jobs.Cancel(fmt.Errorf("samplejobs: LedgerWorker runs only behind idempotency.Middleware: %w", err))
	}
	var te *idempotency.TransactionError
	if errors.As(err, &te) && te.ConditionFailed(0) {
		ooo := &OutOfOrderError{Account: p.Account, PostingID: p.PostingID, Seq: p.Seq}
		if n, ok := te.Reasons[0].Item[LedgerLastSeqAttr].(*types.AttributeValueMemberN); ok {
			ooo.LastSeq, _ = strconv.ParseInt(n.Value, 10, 64)
		}
		return jobs.Cancel(ooo)
	}
	return err
}
