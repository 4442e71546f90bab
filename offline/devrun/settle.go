package devrun

import (
	"context"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// Settle counts every job queue like Census, then lists the dead-letter queues to sort each job
// received by where it ended (Census.Tally): succeeded, dead (in a dead-letter queue: redriven and
// dead-lettered again, it is dead, not lost), still on its queue, or lost. Take it once the
// stack has stopped: the listing hides the dead-letter messages from other readers while it runs.
func (c *Counter) Settle(ctx context.Context) (*Census, error) {
	census, err := c.Census(ctx)
	if err != nil {
		return nil, err
	}
	end := tally.End{InDLQ: map[string]bool{}, OnQueue: map[string]int{}, UnknownDead: map[string]int{}}
	for _, q := range census.Queues {
		end.OnQueue[q.Queue.Name] = q.Queued + q.Running
		if q.Queue.DLQURL == "" {
			continue
		}
		list, err := c.inspector.ListDead(ctx, q.Queue.DLQURL, &inspect.ListOptions{Limit: 100000, Visibility: 30 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("devrun: list %s's dead-letter queue: %w", q.Queue.Name, err)
		}
		// What the listing could not show (a FIFO queue shows the head of each group) may be
		// any job of the queue.
		end.UnknownDead[q.Queue.Name] = max(0, int(list.Approximate)-list.Scanned)
		for _, dj := range list.Jobs {
			// The dead-letter copy's body is the message's, byte for byte: the same job.
			id, _ := tally.Identify(dj.Body)
			end.InDLQ[id] = true
		}
	}
	var received []tally.Job
	for _, j := range c.book.Jobs() {
		if j.Deliveries > 0 {
			received = append(received, j)
		}
	}
	t := tally.Settle(received, end)
	census.Tally, census.Lost = &t, len(t.Lost)
	return census, nil
}
