package devrun

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// QueueAPI is the part of the SQS client a Counter calls: queue depths, and the dead-letter
// listings of Settle (inspect.SQSAPI).
type QueueAPI = inspect.SQSAPI

var _ QueueAPI = (*sqs.Client)(nil)

// JobQueue is a queue of the deployment whose messages run as jobs: the source of an event source
// mapping, or a queue a stack output JobkitQueue<Name> names.
type JobQueue struct {
	Name   string // <Name> of its JobkitQueue<Name> output, else its logical id
	URL    string
	DLQURL string // "" if it has none
}

// Counter counts the jobs of every job queue of a deployment, by job id (a tally.Book). Feed it
// the stack's batch reports (OnBatch) and the functions' output (ReadLine); Census reads the
// queues' depths, Settle also lists the dead-letter queues. It is safe for concurrent use.
type Counter struct {
	sqs       QueueAPI
	inspector *inspect.Inspector
	queues    []JobQueue
	byURL     map[string]int // queue URL to index
	book      *tally.Book
}

// NewCounter returns a Counter for the job queues of d.
func NewCounter(client QueueAPI, d *deploy.Deployment) *Counter {
	c := &Counter{
		sqs: client, inspector: inspect.New(aws.Config{}, func(o *inspect.Options) { o.SQS = client }),
		byURL: map[string]int{}, book: tally.NewBook(),
	}
	c.queues = JobQueues(d)
	for i, q := range c.queues {
		c.byURL[q.URL] = i
	}
	return c
}

// JobQueues returns d's job queues in name order: every queue a mapping reads or a stack output
// JobkitQueue<Name> names, with its dead-letter queue (the output JobkitDlq<Name>, else the
// redrive policy's target, through the holding queue when it is one). A queue some queue's redrive
// policy targets is no job queue, though a mapping reads it: a JobQueue's holding queue, whose
// mapping is its redrive recorder's.
func JobQueues(d *deploy.Deployment) []JobQueue {
	names, dlqs := map[string]string{}, map[string]string{}
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			if n, ok := strings.CutPrefix(k, contract.OutputQueuePrefix); ok && n != "" {
				names[v] = n
			}
			if n, ok := strings.CutPrefix(k, contract.OutputDLQPrefix); ok && n != "" {
				dlqs[n] = v
			}
		}
	}
	isJob, isTarget := map[string]bool{}, map[string]bool{}
	for _, m := range d.Mappings {
		isJob[m.QueueURL] = true
	}
	for _, q := range d.Queues {
		if q.DeadLetterARN != "" {
			isTarget[q.DeadLetterARN] = true
		}
	}
	var out []JobQueue
	for _, q := range d.Queues {
		name, named := names[q.URL]
		if !named && (!isJob[q.URL] || isTarget[q.ARN]) {
			continue
		}
		if !named {
			name = q.LogicalID
		}
		jq := JobQueue{Name: name, URL: q.URL, DLQURL: dlqs[name]}
		if dq := d.QueueByARN(q.DeadLetterARN); jq.DLQURL == "" && dq != nil {
			if held := d.QueueByARN(dq.DeadLetterARN); held != nil {
				dq = held // the holding queue's own target: the dead-letter queue
			}
			jq.DLQURL = dq.URL
		}
		out = append(out, jq)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Queues returns the job queues counted, in name order.
func (c *Counter) Queues() []JobQueue { return append([]JobQueue(nil), c.queues...) }

// OnBatch reads an event source mapping's report (devstack.Config.OnBatch).
func (c *Counter) OnBatch(_ string, rep esm.BatchReport) {
	if i, ok := c.byURL[rep.QueueURL]; ok {
		c.book.OnBatch(c.queues[i].Name, rep)
	}
}

// ReadLine reads one line of a function's output ("[<function>] <JSON>", as devstack writes it)
// for the runtime's outcomes (tally.ParseLine).
func (c *Counter) ReadLine(line []byte) { c.book.ReadLine(line) }

// Census counts every job queue now.
func (c *Counter) Census(ctx context.Context) (*Census, error) {
	out := &Census{}
	per := map[string]*Counts{}
	for _, q := range c.queues {
		qc := QueueCounts{Queue: q}
		var err error
		if qc.Queued, qc.Running, err = c.depth(ctx, q.URL); err != nil {
			return nil, err
		}
		if q.DLQURL != "" {
			waiting, inFlight, err := c.depth(ctx, q.DLQURL)
			if err != nil {
				return nil, err
			}
			qc.Dead = waiting + inFlight
		}
		out.Queues = append(out.Queues, qc)
	}
	for i := range out.Queues {
		per[out.Queues[i].Queue.Name] = &out.Queues[i].Counts
	}
	for _, j := range c.book.Jobs() {
		n := per[j.Queue]
		if n == nil || j.Deliveries == 0 {
			continue
		}
		out.Seen++
		switch {
		case j.Cancelled && j.DeletedAfterRun:
			n.Cancelled++
		case j.DeletedAfterRun:
			n.Succeeded++
		}
		if j.Retried {
			n.Retried++
		}
	}
	for _, q := range out.Queues {
		out.Total.Queued += q.Queued
		out.Total.Running += q.Running
		out.Total.Succeeded += q.Succeeded
		out.Total.Retried += q.Retried
		out.Total.Dead += q.Dead
		out.Total.Cancelled += q.Cancelled
	}
	return out, nil
}

// depth returns a queue's waiting (visible and delayed) and in-flight message counts.
func (c *Counter) depth(ctx context.Context, url string) (waiting, inFlight int, err error) {
	st, err := c.inspector.Depth(ctx, url)
	if err != nil {
		return 0, 0, fmt.Errorf("devrun: queue depth of %s: %w", url, err)
	}
	return int(st.Visible + st.Delayed), int(st.InFlight), nil
}
