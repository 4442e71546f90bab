package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
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
		res, err := mover.Redrive(ctx, dlq, &inspect.RedriveOptions{Sources: []string{queue}})
		if err != nil {
			return nil, fmt.Errorf("chaos: redrive %s: %w", dlq, err)
		}
		rs.Moved += res.Moved
		fmt.Fprintf(r.cfg.Progress, "chaos: redrive of %s: %d listed (%d not shown), %s move: moved=%d returned=%d failed=%d no_destination=%d left_in_flight=%d\n",
			jobs.QueueName(dlq), list.Scanned, unlisted, res.Method, res.Moved, res.Returned, res.Failed, res.NoDestination, res.LeftInFlight)
	}
	return rs, nil
}
