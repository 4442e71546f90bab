package samplejobs

import (
	"context"
	"errors"
	"fmt"
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
)

// PostLedger applies one posting to an account's balance. Enqueue it on the FIFO Ledger queue
// with the account as message group (see GroupID) so that an account's postings apply one at a
// time, in order, while accounts proceed in parallel.
type PostLedger struct {
	Account     string `json:"account"`
	PostingID   string `json:"posting_id"`
	AmountCents int64  `json:"amount_cents"`
	Faults
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
	if err := job.Args.Inject(job.JobRow); err != nil {
		return err
	}
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
		Set(expression.Name(LedgerUpdatedAttr), expression.Value(now().UTC().Format(time.RFC3339Nano)))
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return jobs.Cancel(fmt.Errorf("samplejobs: ledger update: %w", err))
	}
	item := types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(w.Table),
		Key:                       map[string]types.AttributeValue{LedgerAccountAttr: &types.AttributeValueMemberS{Value: p.Account}},
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}
	err = idempotency.TransactWrite(ctx, []types.TransactWriteItem{item}, nil)
	if errors.Is(err, idempotency.ErrNoClaim) {
		// Wiring error: without the middleware the posting could apply twice.
		return jobs.Cancel(fmt.Errorf("samplejobs: LedgerWorker runs only behind idempotency.Middleware: %w", err))
	}
	return err
}
