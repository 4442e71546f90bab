package devapp

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
)

// OutboxDemo is the transactional outbox part of a demo workload: accounts opened with
// samplejobs.OpenAccount, each with its welcome email job written in the same DynamoDB
// transaction. No job is sent by the demo: the outbox forwarder (cmd/jobkit-outbox, on the state
// table's stream) sends them, and the email function runs them. The zero OutboxDemo opens none.
type OutboxDemo struct {
	// Accounts is how many accounts to open.
	Accounts int
}

// DevOutboxDemo is what `jobkit dev` adds: 5 accounts.
func DevOutboxDemo() OutboxDemo { return OutboxDemo{Accounts: 5} }

// OutboxResult is what the outbox demo did.
type OutboxResult struct {
	// JobIDs are the welcome emails written to the outbox, one per account opened.
	JobIDs []string
	// Left is how many of their outbox items were still in the state table at the end: the
	// forwarder deletes each item it sent.
	Left int
	// Invocations of the forwarder by the stream's event source mapping, and the stream records
	// its filter kept from it (the state table's other writes).
	Invocations, Filtered int64
}

// Line is "DEV outbox: written=<n> forwarded=<n> left=<n>"; whether the jobs ran is in the
// summary line (a job the forwarder never sent is lost).
func (r *OutboxResult) Line() string {
	return fmt.Sprintf("DEV outbox: written=%d forwarded=%d left=%d", len(r.JobIDs), len(r.JobIDs)-r.Left, r.Left)
}

// ledgerTableOf returns the ledger table the deployment's ledger function writes, or "".
func ledgerTableOf(d *deploy.Deployment) string {
	for _, f := range d.Functions {
		if t := f.Env[samplejobs.EnvLedgerTable]; t != "" {
			return t
		}
	}
	return ""
}

// runOutboxDemo opens the demo's accounts and tracks their welcome emails.
func runOutboxDemo(ctx context.Context, cfg Config, tr *Tracker, d *deploy.Deployment) (*OutboxResult, error) {
	res := &OutboxResult{}
	if cfg.OutboxDemo.Accounts == 0 {
		return res, nil
	}
	state, ledger := stateTableOf(d), ledgerTableOf(d)
	if state == "" || ledger == "" {
		return res, fmt.Errorf("demo: outbox: the deployment has no state table (%q) or ledger table (%q)", state, ledger)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg.AWS), jobs.ClientOptions{Queues: tr.Routes()})
	if err != nil {
		return res, err
	}
	ob, err := outbox.New(outbox.Config{Table: state, Client: client})
	if err != nil {
		return res, err
	}
	db := dynamodb.NewFromConfig(cfg.AWS)
	for i := range cfg.OutboxDemo.Accounts {
		account, email := fmt.Sprintf("new-%d", i+1), fmt.Sprintf("owner%d@example.com", i+1)
		id, err := samplejobs.OpenAccount(ctx, ob, db, ledger, account, email)
		if err != nil {
			return res, fmt.Errorf("demo: outbox: open account %s: %w", account, err)
		}
		res.JobIDs = append(res.JobIDs, id)
		tr.Add(jobs.EnqueueResult{ID: id, Kind: samplejobs.KindSendEmail, QueueURL: client.QueueFor(samplejobs.KindSendEmail)},
			samplejobs.SendEmail{To: email, Subject: samplejobs.WelcomeSubject}, "", "")
	}
	cfg.note("outbox: %d accounts opened, each with its welcome email in the same transaction (sent by the outbox forwarder)", len(res.JobIDs))
	return res, nil
}

// readStreams records the stream mappings' counters.
func (r *OutboxResult) readStreams(stack *devstack.Stack) {
	if r == nil {
		return
	}
	for _, st := range stack.StreamStats() {
		r.Invocations += st.Invocations
		r.Filtered += st.Filtered
	}
}

// countLeft counts the demo's outbox items still in the state table.
func (r *OutboxResult) countLeft(ctx context.Context, cfg Config, d *deploy.Deployment) error {
	if r == nil || len(r.JobIDs) == 0 {
		return nil
	}
	db, table := dynamodb.NewFromConfig(cfg.AWS), stateTableOf(d)
	r.Left = 0
	for _, id := range r.JobIDs {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{outbox.AttrID: &ddbtypes.AttributeValueMemberS{Value: outbox.KeyPrefix + id}}})
		if err != nil {
			return fmt.Errorf("demo: outbox: %w", err)
		}
		if out.Item != nil {
			r.Left++
		}
	}
	return nil
}
