package devapp

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/offline/deploy"
)

// StateDemo is the job state part of a demo workload: fan-out batches of emails with a callback
// each (samplejobs.EmailBatchDone), and unique jobs. The zero StateDemo does neither.
type StateDemo struct {
	// Batches is how many email batches to open; each gets BatchMembers emails, added in two
	// steps (the second while members of the first are running), PoisonPerBatch of them poison
	// (dead), then closed.
	Batches, BatchMembers, PoisonPerBatch int
	// UniqueEnqueues emails are enqueued with EnqueueOpts.Unique over UniqueKeys keys: one job
	// per key is sent, the rest are deduplicated.
	UniqueEnqueues, UniqueKeys int
}

// DevStateDemo is what `jobkit dev` adds: 3 batches of 12 emails (one poison each) and 20 unique
// enqueues over 5 keys.
func DevStateDemo() StateDemo {
	return StateDemo{Batches: 3, BatchMembers: 12, PoisonPerBatch: 1, UniqueEnqueues: 20, UniqueKeys: 5}
}

// StateResult is what the job state demo did.
type StateResult struct {
	BatchIDs           []string
	Opened             int // batches opened
	Callbacks          int // batches whose callback ran
	DuplicateCallbacks int // callback runs beyond one per batch
	UniqueSent         int // unique enqueues that sent a job
	UniqueDeduplicated int // unique enqueues that found their key held
}

// BatchLine is "DEV batches: opened=<n> callbacks=<n> duplicate_callbacks=<n>".
func (r *StateResult) BatchLine() string {
	return fmt.Sprintf("DEV batches: opened=%d callbacks=%d duplicate_callbacks=%d", r.Opened, r.Callbacks, r.DuplicateCallbacks)
}

// UniqueLine is "DEV unique: sent=<n> deduplicated=<n>".
func (r *StateResult) UniqueLine() string {
	return fmt.Sprintf("DEV unique: sent=%d deduplicated=%d", r.UniqueSent, r.UniqueDeduplicated)
}

// stateTableOf returns the deployment's jobkit state table (the stack output JobkitStateTable).
func stateTableOf(d *deploy.Deployment) string {
	for _, s := range d.Stacks {
		if v := s.Outputs[contract.OutputStateTable]; v != "" {
			return v
		}
	}
	return ""
}

// runStateDemo enqueues the batches and unique jobs of demo, tracking every job sent (the
// batches' callbacks included, which the email function enqueues).
func runStateDemo(ctx context.Context, cfg Config, tr *Tracker, d *deploy.Deployment) (*StateResult, error) {
	demo := cfg.StateDemo
	res := &StateResult{}
	if demo.Batches == 0 && demo.UniqueEnqueues == 0 {
		return res, nil
	}
	name := stateTableOf(d)
	if name == "" {
		return res, fmt.Errorf("demo: the deployment has no %s output: no job state table", contract.OutputStateTable)
	}
	table, err := state.New(dynamodb.NewFromConfig(cfg.AWS), name, &state.Options{ListJobs: true})
	if err != nil {
		return res, err
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg.AWS), jobs.ClientOptions{Queues: tr.Routes(), State: table})
	if err != nil {
		return res, err
	}
	for b := range demo.Batches {
		if err := demoBatch(ctx, client, table, tr, demo, b, res); err != nil {
			return res, err
		}
	}
	for i := range demo.UniqueEnqueues {
		key := fmt.Sprintf("digest-%d", i%max(demo.UniqueKeys, 1))
		args := samplejobs.SendEmail{To: key + "@example.com", Subject: "Your digest"}
		r, err := client.Enqueue(ctx, args, &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: key, Window: defaultUniqueWindow}})
		if err != nil {
			return res, fmt.Errorf("demo: unique enqueue: %w", err)
		}
		if r.Duplicate {
			res.UniqueDeduplicated++
			continue
		}
		res.UniqueSent++
		tr.Add(r, args, "", "")
	}
	cfg.note("job states: %d batches of %d emails opened and closed; %d unique enqueues (%d sent)",
		demo.Batches, demo.BatchMembers, demo.UniqueEnqueues, res.UniqueSent)
	return res, nil
}

// defaultUniqueWindow is the demo's uniqueness window: longer than any run.
const defaultUniqueWindow = 24 * time.Hour

// demoBatch opens batch b, adds its members in two steps and closes it.
func demoBatch(ctx context.Context, client *jobs.Client, table *state.Table, tr *Tracker, demo StateDemo, b int, res *StateResult) error {
	campaign := fmt.Sprintf("campaign-%d", b+1)
	batch, err := table.OpenBatch(ctx, client, state.BatchOpts{Callback: samplejobs.EmailBatchDone{Campaign: campaign}})
	if err != nil {
		return fmt.Errorf("demo: open batch: %w", err)
	}
	res.Opened++
	res.BatchIDs = append(res.BatchIDs, batch.ID)
	members := make([]jobs.BatchJob, demo.BatchMembers)
	for i := range members {
		var args jobs.JobArgs = samplejobs.SendEmail{To: fmt.Sprintf("reader%d@example.com", i), Subject: campaign}
		if i < demo.PoisonPerBatch {
			args = instrument.WithFaults(args, instrument.Faults{Poison: true})
		}
		members[i] = jobs.BatchJob{Args: args}
	}
	half := len(members) / 2
	for _, part := range [][]jobs.BatchJob{members[:half], members[half:]} {
		results, err := batch.Add(ctx, part)
		for i, r := range results {
			tr.Add(r, part[i].Args, "", "")
		}
		if err != nil {
			return fmt.Errorf("demo: add to batch: %w", err)
		}
	}
	if err := batch.Close(ctx); err != nil {
		return fmt.Errorf("demo: close batch: %w", err)
	}
	// The callback: enqueued by the email function once every member has ended.
	tr.Add(jobs.EnqueueResult{ID: state.CallbackID(batch.ID), Kind: samplejobs.KindEmailBatchDone, QueueURL: client.QueueFor(samplejobs.KindEmailBatchDone)},
		samplejobs.EmailBatchDone{Campaign: campaign}, "", "")
	return nil
}

// countCallbacks fills in the callbacks the email function's output reports.
func (r *StateResult) countCallbacks(tr *Tracker) {
	runs := tr.BatchCallbacks()
	ids := append([]string(nil), r.BatchIDs...)
	sort.Strings(ids)
	for _, id := range ids {
		if n := runs[id]; n > 0 {
			r.Callbacks++
			r.DuplicateCallbacks += n - 1
		}
	}
}
