package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// Defaults of the fan-out batches a run adds (Config.Batches, Config.BatchMembers).
const (
	DefaultBatches      = 10
	DefaultBatchMembers = 20
	// callbackWait bounds the wait for the batches' callbacks once the planned jobs settled.
	callbackWait = 2 * time.Minute
)

// batchDoneNeedle is in every line the sample's batch callback writes.
var batchDoneNeedle = []byte(`"msg":"` + samplejobs.BatchDoneMessage + `"`)

// readCallback counts a batch callback line (samplejobs.BatchDoneMessage) of the functions' output.
func (o *outputWatch) readCallback(line []byte) {
	if !bytes.Contains(line, batchDoneNeedle) {
		return
	}
	var rec struct {
		BatchID string `json:"batch_id"`
	}
	if i := bytes.IndexByte(line, '{'); i >= 0 && json.Unmarshal(line[i:], &rec) == nil && rec.BatchID != "" {
		o.mu.Lock()
		o.callbacks[rec.BatchID]++
		o.mu.Unlock()
	}
}

func (o *outputWatch) callbackRuns() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.callbacks)
}

// enqueueBatches opens the run's fan-out batches of emails — members under the run's faults: a
// seventh fail once, a tenth are poison — adds each batch's members in two steps and closes it.
// The producer side calls the emulator directly: the faults are the workers'.
func (r *runner) enqueueBatches(ctx context.Context) error {
	if r.cfg.Batches <= 0 {
		return nil
	}
	name := ""
	for _, st := range r.stack.Deployment.Stacks {
		if v := st.Outputs[contract.OutputStateTable]; v != "" {
			name = v
		}
	}
	if name == "" {
		return fmt.Errorf("chaos: the deployment has no %s output", contract.OutputStateTable)
	}
	table, err := state.New(dynamodb.NewFromConfig(r.stack.Direct), name, nil)
	if err != nil {
		return err
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(r.stack.Direct), jobs.ClientOptions{
		DefaultQueueURL: r.stack.QueueURL(samplejobs.KindSendEmail), State: table, MaxRetries: 10,
	})
	if err != nil {
		return err
	}
	for b := range r.cfg.Batches {
		batch, err := table.OpenBatch(ctx, client, state.BatchOpts{Callback: samplejobs.EmailBatchDone{Campaign: fmt.Sprintf("chaos-%d", b)}})
		if err != nil {
			return fmt.Errorf("chaos: open batch: %w", err)
		}
		r.batchIDs = append(r.batchIDs, batch.ID)
		members := make([]jobs.BatchJob, r.cfg.BatchMembers)
		for i := range members {
			var f instrument.Faults
			switch {
			case i%10 == 9:
				f.Poison = true
			case i%7 == 3:
				f.FailAttempts = 1
			}
			members[i] = jobs.BatchJob{Args: instrument.WithFaults(samplejobs.SendEmail{To: fmt.Sprintf("m%d@example.com", i), Subject: batch.ID}, f)}
		}
		half := len(members) / 2
		for _, part := range [][]jobs.BatchJob{members[:half], members[half:]} {
			if _, err := batch.Add(ctx, part); err != nil {
				return fmt.Errorf("chaos: add to batch %s: %w", batch.ID, err)
			}
		}
		if err := batch.Close(ctx); err != nil {
			return fmt.Errorf("chaos: close batch %s: %w", batch.ID, err)
		}
	}
	fmt.Fprintf(r.cfg.Progress, "chaos: %d batches of %d emails opened and closed\n", r.cfg.Batches, r.cfg.BatchMembers)
	return nil
}

// waitCallbacks waits until every batch's callback has run, at most callbackWait.
func (r *runner) waitCallbacks(ctx context.Context) {
	deadline := time.Now().Add(callbackWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		runs := r.out.callbackRuns()
		done := 0
		for _, id := range r.batchIDs {
			if runs[id] > 0 {
				done++
			}
		}
		if done == len(r.batchIDs) {
			return
		}
		time.Sleep(time.Second)
	}
}

// countBatches fills in the report's batch figures from the effects table: a callback counts
// once its effect committed with its idempotency record (instrument.Effects), which is what
// idempotency.Middleware promises of the callback's worker — its effect once, whatever the
// callback messages. The callback's body may start more often than that (a completion that failed
// after the body ran releases the claim and the job runs again; at-least-once delivery), which
// the run prints but does not count as a duplicate.
func (r *runner) countBatches(rep *Report, effects map[string]instrument.EffectCount) {
	runs := r.out.callbackRuns()
	rep.Batches = len(r.batchIDs)
	for _, id := range r.batchIDs {
		switch n := effects[state.CallbackID(id)].Applied; {
		case n == 0:
			rep.MissingCallbacks++
		default:
			rep.Callbacks++
			rep.DuplicateCallbacks += n - 1
		}
		if runs[id] > 1 {
			fmt.Fprintf(r.cfg.Progress, "chaos: the callback of batch %s started %d times, its effect committed %d\n",
				id, runs[id], effects[state.CallbackID(id)].Applied)
		}
	}
}
