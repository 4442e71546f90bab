package devapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// Counts are the numbers of jobs in each state.
type Counts struct {
	Enqueued  int // jobs enqueued or sent by a schedule
	Running   int // messages in an invocation now (the event source mappings' count)
	Pending   int // messages in the queue: waiting, in flight or delayed (SQS's approximate counts)
	Succeeded int
	Retried   int // jobs that failed at least one attempt
	Dead      int // jobs in the dead-letter queue
}

// Add adds o's counts to c's.
func (c *Counts) Add(o Counts) {
	c.Enqueued += o.Enqueued
	c.Running += o.Running
	c.Pending += o.Pending
	c.Succeeded += o.Succeeded
	c.Retried += o.Retried
	c.Dead += o.Dead
}

// QueueCensus is one queue's counts.
type QueueCensus struct {
	Name string
	Counts
}

// Census is what became of the tracked jobs at one moment.
type Census struct {
	At     time.Time
	Queues []QueueCensus
	Total  Counts
	// Full is set when the dead-letter queues were listed: Dead counts the tracked jobs found
	// there (plus Unlisted), Lost is computed and DeadJobs filled. Otherwise Dead is the
	// dead-letter queues' approximate depth.
	Full bool
	// Unaccounted is the number of tracked jobs neither succeeded nor dead-lettered (by job when
	// Full; by counts otherwise).
	Unaccounted int
	// Lost is the number of tracked jobs neither succeeded, nor dead-lettered, nor still on their
	// queue (Full only: LostJobs names them).
	Lost int
	// LostJobs are the lost jobs, each with its last known state; Left are the tracked jobs
	// still on their queues, whose state has not ended (Full only; package tally sorts them).
	LostJobs, Left []tally.Job
	// Unlisted is the number of dead-letter messages a listing could not show (a FIFO queue
	// shows the head of each message group only); they are counted in Dead.
	Unlisted int
	// Foreign is the number of dead-letter messages that are not tracked jobs.
	Foreign int
	// DeadJobs are the tracked jobs found in the dead-letter queues (Full only).
	DeadJobs []inspect.DeadJob
	// Succeeded holds the ids of the tracked jobs that succeeded.
	Succeeded map[string]bool
}

// LostLines names the lost jobs of a full census, one per line with its kind, queue and last
// known state (at most tally.DefaultNamed, then "and N more").
func (c *Census) LostLines() []string { return tally.Lines(c.LostJobs, 0) }

// LeftLines names the tracked jobs still on their queues at a full census, like LostLines.
func (c *Census) LeftLines() []string { return tally.Lines(c.Left, 0) }

// LostError returns nil when no job was lost, else an error naming them.
func (c *Census) LostError() error {
	if c.Lost == 0 {
		return nil
	}
	return fmt.Errorf("%d job(s) lost: %s", c.Lost, strings.Join(c.LostLines(), "; "))
}

// Drained reports whether every tracked job succeeded or was dead-lettered.
func (c *Census) Drained() bool { return c.Full && c.Unaccounted == 0 }

// Census counts what became of the tracked jobs. With full, it lists the dead-letter queues (a
// second or two) to identify the dead jobs; without, it reads their depth.
func (t *Tracker) Census(ctx context.Context, full bool) (*Census, error) {
	c := &Census{At: time.Now(), Full: full, Succeeded: map[string]bool{}}
	tracked := t.Jobs()
	in, err := t.readState(ctx, full)
	if err != nil {
		return nil, err
	}
	dead := map[string]bool{}
	if full {
		dead = t.listDead(c, in.lists)
	}
	per := t.queueCounts(in, full)
	t.countJobs(c, tracked, per, in.completed, dead, full)
	t.total(c, per, in.lists, full)
	if full {
		t.settle(c, tracked, per, in.lists, dead)
	}
	return c, nil
}

// settle sorts the tracked jobs of a full census by where they ended (package tally): succeeded by
// the stack's own records, dead when in a dead-letter queue (or one of the messages its listing
// could not show), still on their queue, or lost; it names the lost and those left.
func (t *Tracker) settle(c *Census, tracked []*Tracked, per map[*Queue]*Counts, lists []*inspect.DeadList, dead map[string]bool) {
	end := tally.End{Succeeded: c.Succeeded, InDLQ: dead, OnQueue: map[string]int{}, UnknownDead: map[string]int{}}
	for i, q := range t.queues {
		end.OnQueue[q.Name] = per[q].Pending
		if l := lists[i]; l != nil {
			end.UnknownDead[q.Name] = max(0, int(l.Approximate)-l.Scanned)
		}
	}
	var last []tally.Job
	for _, j := range tracked {
		if j.queueInfo == nil {
			continue
		}
		job, _ := t.book.Job(j.ID)
		last = append(last, job)
	}
	sorted := tally.Settle(last, end)
	c.Lost, c.LostJobs, c.Left = len(sorted.Lost), sorted.Lost, sorted.Stranded
}

// censusState is what a census reads from the emulator, by queue (index of t.queues).
type censusState struct {
	depths    []queueDepth        // each queue's and its dead-letter queue's messages
	completed map[string]bool     // the idempotency keys COMPLETED in the queues' tables
	lists     []*inspect.DeadList // each dead-letter queue's listing (full census only)
}

// queueDepth is a queue's messages (main), those of them in flight, and its dead-letter queue's.
type queueDepth struct{ main, inFlight, dlq int }

// gather runs calls concurrently and collects their errors.
type gather struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (g *gather) do(fn func() error) {
	g.wg.Go(func() {
		if err := fn(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

func (g *gather) wait() error {
	g.wg.Wait()
	return errors.Join(g.errs...)
}

// readState reads, concurrently, the queue depths, the completed idempotency records and, for a
// full census, the dead-letter listings.
func (t *Tracker) readState(ctx context.Context, full bool) (*censusState, error) {
	st := &censusState{depths: make([]queueDepth, len(t.queues)), completed: map[string]bool{}, lists: make([]*inspect.DeadList, len(t.queues))}
	var g gather
	for i, q := range t.queues {
		g.do(func() (err error) {
			if st.depths[i].main, st.depths[i].inFlight, err = t.depth(ctx, q.URL); err != nil || q.DLQURL == "" {
				return err
			}
			st.depths[i].dlq, _, err = t.depth(ctx, q.DLQURL)
			return err
		})
	}
	tables := map[string]bool{}
	for _, q := range t.queues {
		if q.IdempotencyTable != "" {
			tables[q.IdempotencyTable] = true
		}
	}
	for table := range tables {
		g.do(func() error {
			keys, err := CompletedKeys(ctx, t.ddb, table)
			g.mu.Lock()
			defer g.mu.Unlock()
			for k := range keys {
				st.completed[k] = true
			}
			return err
		})
	}
	for i, q := range t.queues {
		if !full || q.DLQURL == "" {
			continue
		}
		g.do(func() (err error) {
			st.lists[i], err = t.inspector.ListDead(ctx, q.DLQURL, &inspect.ListOptions{Limit: 100000, Visibility: 30 * time.Second})
			return err
		})
	}
	if err := g.wait(); err != nil {
		return nil, fmt.Errorf("demo: census: %w", err)
	}
	return st, nil
}

// listDead adds the tracked jobs of the dead-letter listings to c.DeadJobs (once each) and
// returns their ids; it counts the rest as c.Foreign and what the listings could not show as
// c.Unlisted.
func (t *Tracker) listDead(c *Census, lists []*inspect.DeadList) map[string]bool {
	dead := map[string]bool{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		c.Unlisted += max(0, int(l.Approximate)-l.Scanned)
		for _, j := range l.Jobs {
			if tj := t.lookup(j.JobID); tj != nil && !dead[j.JobID] {
				dead[j.JobID] = true
				c.DeadJobs = append(c.DeadJobs, j)
			} else {
				c.Foreign++
			}
		}
	}
	return dead
}

// queueCounts starts each queue's counts from its depths and the messages its pollers hold.
func (t *Tracker) queueCounts(st *censusState, full bool) map[*Queue]*Counts {
	var stats []devstack.MappingStats
	t.mu.Lock()
	if t.stack != nil {
		stats = t.stack.Stats()
	}
	t.mu.Unlock()
	running := map[string]int{}
	for _, s := range stats {
		running[s.QueueURL] += int(max(0, s.Received-s.Deleted-s.Returned))
	}
	per := map[*Queue]*Counts{}
	for i, q := range t.queues {
		r, polled := running[q.URL]
		if !polled {
			// No event source mapping reads this queue: a container consumer does, and what it
			// holds is what is in flight.
			r = st.depths[i].inFlight
		}
		// A message retried with a short backoff can be received again before the batch that
		// failed it is settled: never show more running than the queue holds.
		per[q] = &Counts{Pending: st.depths[i].main, Running: min(r, st.depths[i].main)}
		if !full {
			per[q].Dead = st.depths[i].dlq
		}
	}
	return per
}

// countJobs counts each tracked job in its queue's counts: enqueued, retried, succeeded (a
// COMPLETED idempotency record, or the transcode's output line), dead (a full census's
// listings) or, in a full census, unaccounted.
func (t *Tracker) countJobs(c *Census, tracked []*Tracked, per map[*Queue]*Counts, completed, dead map[string]bool, full bool) {
	for _, j := range tracked {
		q := j.queueInfo
		if q == nil {
			continue
		}
		n := per[q]
		n.Enqueued++
		e := t.Effects(j)
		if e.FailedAttempts > 0 || e.BatchFailed {
			n.Retried++
		}
		ok := false
		if q.IdempotencyTable != "" {
			ok = completed[j.IdempotencyKey()]
		} else {
			ok = e.TranscodesDone > 0
		}
		if ok {
			n.Succeeded++
			c.Succeeded[j.ID] = true
		}
		switch {
		case full && dead[j.ID]:
			n.Dead++
		case full && !ok:
			c.Unaccounted++
		}
	}
}

// total adds the queues' counts to c, and works out the unaccounted jobs of a census that is not
// full (a full one counts them by job).
func (t *Tracker) total(c *Census, per map[*Queue]*Counts, lists []*inspect.DeadList, full bool) {
	for i, q := range t.queues {
		n := per[q]
		if full && q.DLQURL != "" && lists[i] != nil {
			n.Dead += max(0, int(lists[i].Approximate)-lists[i].Scanned)
		}
		c.Queues = append(c.Queues, QueueCensus{Name: q.Name, Counts: *n})
		c.Total.Add(*n)
	}
	if !full {
		c.Unaccounted = max(0, c.Total.Enqueued-c.Total.Succeeded-c.Total.Dead)
	}
}

// depth returns a queue's visible + in-flight + delayed messages, and the in-flight ones.
func (t *Tracker) depth(ctx context.Context, url string) (total, inFlight int, err error) {
	st, err := t.inspector.Depth(ctx, url)
	if err != nil {
		return 0, 0, fmt.Errorf("attributes of %s: %w", awsarn.QueueName(url), err)
	}
	return int(st.Total()), int(st.InFlight), nil
}

// CompletedKeys returns the keys of the COMPLETED records of an idempotency table.
func CompletedKeys(ctx context.Context, db DynamoDBAPI, table string) (map[string]bool, error) {
	expr, err := expression.NewBuilder().
		WithFilter(expression.Name(idempotency.AttrStatus).Equal(expression.Value(string(idempotency.StatusCompleted)))).
		WithProjection(expression.NamesList(expression.Name(idempotency.AttrID))).
		Build()
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	in := &dynamodb.ScanInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	for {
		out, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		for _, item := range out.Items {
			if s, ok := item[idempotency.AttrID].(*ddbtypes.AttributeValueMemberS); ok {
				keys[s.Value] = true
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
