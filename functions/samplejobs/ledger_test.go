package samplejobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type ledgerItem struct {
	Account  string   `dynamodbav:"account"`
	Balance  int64    `dynamodbav:"balance"`
	Postings int      `dynamodbav:"postings"`
	Last     string   `dynamodbav:"last_posting"`
	Applied  []string `dynamodbav:"applied"`
	LastSeq  int64    `dynamodbav:"last_seq"`
}

// ledgerFixture wires the ledger worker as functions/ledger does, against the emulator.
func ledgerFixture(t *testing.T) (*jobs.Workers, func(account string) (ledgerItem, bool)) {
	t.Helper()
	cfg := awstest.Config(t)
	idemTable := awstest.CreateTable(t, cfg, "idem", "id", "")
	ledgerTable := awstest.CreateTable(t, cfg, "ledger", samplejobs.LedgerAccountAttr, "")
	db := dynamodb.NewFromConfig(cfg)
	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(idempotency.NewDynamoDBStore(db, idemTable), nil))
	jobs.AddWorker(workers, &samplejobs.LedgerWorker{Table: ledgerTable})
	read := func(account string) (ledgerItem, bool) {
		out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName:      aws.String(ledgerTable),
			Key:            map[string]types.AttributeValue{samplejobs.LedgerAccountAttr: &types.AttributeValueMemberS{Value: account}},
			ConsistentRead: aws.Bool(true),
		})
		require.NoError(t, err)
		if out.Item == nil {
			return ledgerItem{}, false
		}
		var item ledgerItem
		require.NoError(t, attributevalue.UnmarshalMap(out.Item, &item))
		return item, true
	}
	return workers, read
}

// Postings apply in order, and a redelivered posting (same job id) applies once.
func TestLedgerWorkerExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	workers, read := ledgerFixture(t)

	postings := []samplejobs.PostLedger{
		{Account: "acct-1", PostingID: "p1", AmountCents: 1000},
		{Account: "acct-1", PostingID: "p2", AmountCents: -250},
		{Account: "acct-1", PostingID: "p3", AmountCents: 40},
	}
	for i, p := range postings {
		opts := &jobstest.JobOpts{ID: "job-" + p.PostingID, GroupID: p.Account}
		require.NoError(t, jobstest.Run(ctx, workers, p, opts), "posting %d", i)
		// The same job delivered again (SQS is at-least-once) is skipped.
		require.NoError(t, jobstest.Run(ctx, workers, p, &jobstest.JobOpts{ID: opts.ID, GroupID: p.Account, Attempt: 2}))
	}
	item, ok := read("acct-1")
	require.True(t, ok)
	require.Equal(t, ledgerItem{Account: "acct-1", Balance: 790, Postings: 3, Last: "p3", Applied: []string{"p1", "p2", "p3"}}, item)

	// Concurrent duplicates of one new posting still apply it once.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = jobstest.Run(ctx, workers, samplejobs.PostLedger{Account: "acct-1", PostingID: "p4", AmountCents: 10}, &jobstest.JobOpts{ID: "job-p4"})
		})
	}
	wg.Wait()
	for _, err := range errs {
		var snooze *jobs.SnoozeError
		if err != nil {
			require.True(t, errors.As(err, &snooze), "a duplicate in progress is snoozed, not failed: %v", err)
		}
	}
	item, _ = read("acct-1")
	require.Equal(t, int64(800), item.Balance)
	require.Equal(t, 4, item.Postings)
	require.Equal(t, []string{"p1", "p2", "p3", "p4"}, item.Applied, "p4 applied once")
}

// Sequenced postings: the ledger records the order it applied them and refuses a posting whose
// Seq is not above the account's last, writing nothing for it.
func TestLedgerWorkerSequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	workers, read := ledgerFixture(t)
	post := func(id string, seq, amount int64) error {
		p := samplejobs.PostLedger{Account: "acct-3", PostingID: id, AmountCents: amount, Seq: seq}
		return jobstest.Run(ctx, workers, p, &jobstest.JobOpts{ID: "job-" + id, GroupID: p.Account})
	}
	require.NoError(t, post("s1", 1, 100))
	require.NoError(t, post("s2", 2, 20))
	require.NoError(t, post("s4", 4, 3), "numbers may be skipped")

	err := post("s3", 3, 1000)
	var cancel *jobs.CancelError
	require.True(t, errors.As(err, &cancel), "an out-of-order posting is not retried: %v", err)
	var ooo *samplejobs.OutOfOrderError
	require.True(t, errors.As(err, &ooo), "%v", err)
	require.Equal(t, samplejobs.OutOfOrderError{Account: "acct-3", PostingID: "s3", Seq: 3, LastSeq: 4}, *ooo)
	err = post("s4-again", 4, 1000)
	require.True(t, errors.As(err, &ooo), "an equal seq is out of order too: %v", err)

	// Unsequenced postings (the scheduled interest) are not checked and leave last_seq alone.
	require.NoError(t, post("interest", 0, 7))
	require.NoError(t, post("s5", 5, 1))

	item, ok := read("acct-3")
	require.True(t, ok)
	require.Equal(t, ledgerItem{Account: "acct-3", Balance: 131, Postings: 5, Last: "s5",
		Applied: []string{"s1", "s2", "s4", "interest", "s5"}, LastSeq: 5}, item)
}

// A redelivered posting applies once; an invalid one is cancelled and writes nothing.
func TestLedgerWorkerRedeliveryAndInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	workers, read := ledgerFixture(t)

	p := samplejobs.PostLedger{Account: "acct-2", PostingID: "p1", AmountCents: 500}
	for attempt := 1; attempt <= 3; attempt++ {
		require.NoError(t, jobstest.Run(ctx, workers, p, &jobstest.JobOpts{ID: "job-f1", Attempt: attempt}))
	}
	item, _ := read("acct-2")
	require.Equal(t, int64(500), item.Balance)

	var cancel *jobs.CancelError
	err := jobstest.Run(ctx, workers, samplejobs.PostLedger{Account: "acct-2"}, nil)
	require.True(t, errors.As(err, &cancel), "no posting id: cancelled")
	item, _ = read("acct-2")
	require.Equal(t, 1, item.Postings)
}

// Without the idempotency middleware the worker refuses to run (it could apply twice).
func TestLedgerWorkerNeedsMiddleware(t *testing.T) {
	t.Parallel()
	err := jobstest.Work(context.Background(), &samplejobs.LedgerWorker{Table: "unused"}, samplejobs.PostLedger{Account: "a", PostingID: "p"}, nil)
	var cancel *jobs.CancelError
	require.True(t, errors.As(err, &cancel))
	require.ErrorIs(t, err, idempotency.ErrNoClaim)
}
