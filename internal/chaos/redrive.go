package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// redriveAndWait, unless Config.NoRedrive, redrives every dead-letter queue (redriveAll) and waits
// up to Config.RedriveTimeout for the redriven jobs to settle. It returns what the redrive found
// (nil when none ran).
func (r *runner) redriveAndWait(ctx context.Context) (*RedriveState, error) {
	if r.cfg.NoRedrive {
		return nil, nil
	}
	start := time.Now()
	rs, err := r.redriveAll(ctx)
	if err != nil {
		return nil, err
	}
	if rs.Moved == 0 {
		return rs, nil
	}
	if !r.wait(ctx, start, start.Add(r.cfg.RedriveTimeout)) {
		fmt.Fprintf(r.cfg.Progress, "chaos: redriven jobs still pending after %s; evaluating as it stands\n", r.cfg.RedriveTimeout)
	}
	return rs, nil
}

// redriveAll lists each dead-letter queue (directly, without faults) for the jobs it holds and the
// runs they had, then redrives it to its queue with the Inspector through the fault proxy, as an
// operator would.
func (r *runner) redriveAll(ctx context.Context) (*RedriveState, error) {
	rs := &RedriveState{Before: map[string]bool{}, RunsBefore: r.out.runsByJob()}
	lister, mover := inspect.New(r.stack.Direct), inspect.New(r.stack.Proxied)
	for _, kind := range jobKinds {
		dlq, queue := r.stack.DLQURL(kind), r.stack.QueueURL(kind)
		list, err := lister.ListDead(ctx, dlq, &inspect.ListOptions{Limit: 100000, Visibility: 30 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("chaos: list dead-letter queue %s: %w", dlq, err)
		}
		unlisted := max(0, int(list.Approximate)-list.Scanned)
		rs.Unlisted += unlisted
		for _, j := range list.Jobs {
			if j.JobID != "" {
				rs.Before[j.JobID] = true
			}
		}
		if list.Scanned == 0 && unlisted == 0 {
			continue
		}
		res, err := r.redriveOne(ctx, mover, dlq, queue)
		if err != nil {
			return nil, err
		}
		rs.Moved += res.Moved
		fmt.Fprintf(r.cfg.Progress, "chaos: redrive of %s: %d listed (%d not shown), %s move: moved=%d returned=%d failed=%d no_destination=%d left_in_flight=%d\n",
			awsarn.QueueName(dlq), list.Scanned, unlisted, res.Method, res.Moved, res.Returned, res.Failed, res.NoDestination, res.LeftInFlight)
	}
	return rs, nil
}

// redriveAttempts is how many times a redrive that fails is run again, as an operator would.
const redriveAttempts = 5

// redriveOne redrives dlq to queue, and runs the redrive again when it fails (a throttled call:
// the Inspector does not retry StartMessageMoveTask, so that an endpoint without it falls back to
// the manual move at once), as an operator would; a redrive run again goes on where the last one
// stopped.
func (r *runner) redriveOne(ctx context.Context, mover *inspect.Inspector, dlq, queue string) (*inspect.RedriveResult, error) {
	var moved int64
	for attempt := 1; ; attempt++ {
		res, err := mover.Redrive(ctx, dlq, &inspect.RedriveOptions{Sources: []string{queue}})
		if res != nil {
			moved += res.Moved
		}
		if err == nil {
			res.Moved = moved
			return res, nil
		}
		if attempt == redriveAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("chaos: redrive %s (%d attempts): %w", dlq, attempt, err)
		}
		fmt.Fprintf(r.cfg.Progress, "chaos: redrive of %s failed, running it again: %v\n", awsarn.QueueName(dlq), err)
		time.Sleep(time.Duration(attempt) * time.Second)
	}
}
