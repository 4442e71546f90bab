package devrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/localstack/deploy"
	"github.com/jobkit-go/jobkit/localstack/esm"
)

// msgDeadLettered is the message of the jobs runtime's log line for a job it dead-lettered
// (jobs/handler.go); the line carries the job's message_id.
const msgDeadLettered = "job dead-lettered"

// QueueAPI is the part of the SQS client a Counter calls.
type QueueAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ QueueAPI = (*sqs.Client)(nil)

// JobQueue is a queue of the deployment whose messages run as jobs: the source of an event source
// mapping, or a queue a stack output JobkitQueue<Name> names.
type JobQueue struct {
	Name   string // <Name> of its JobkitQueue<Name> output, else its logical id
	URL    string
	DLQURL string // "" if it has none
}

// Counts is what became of the jobs of one queue (or all), counted from the stack's records: the
// event source mappings' reports, the runtime's dead-letter log lines and the queues' depths.
type Counts struct {
	Queued    int // messages waiting (visible or delayed)
	Running   int // messages in flight
	Succeeded int // jobs deleted after a run, not dead-lettered
	Retried   int // jobs that failed at least one attempt
	Dead      int // messages in the dead-letter queue
}

// QueueCounts are the counts of one job queue.
type QueueCounts struct {
	Queue JobQueue
	Counts
}

// Census is a count of every job queue at one moment.
type Census struct {
	Queues []QueueCounts
	Total  Counts
	// Seen is the number of distinct messages the mappings received.
	Seen int
	// Lost counts jobs received but neither succeeded, dead-lettered nor still queued.
	Lost int
}

// Summary returns the DEV summary line: "DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>".
func (c *Census) Summary() string {
	return fmt.Sprintf("DEV summary: succeeded=%d retried=%d dead=%d lost=%d", c.Total.Succeeded, c.Total.Retried, c.Total.Dead, c.Lost)
}

// Line returns the census on one line, for a display that is not a terminal.
func (c *Census) Line() string {
	t := c.Total
	return fmt.Sprintf("dev: queued=%d running=%d succeeded=%d retried=%d dead=%d", t.Queued, t.Running, t.Succeeded, t.Retried, t.Dead)
}

// Table returns the census as a table, a row per job queue and a total.
func (c *Census) Table() string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "queue\tqueued\trunning\tsucceeded\tretried\tdead\t")
	row := func(name string, n Counts) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, n.Queued, n.Running, n.Succeeded, n.Retried, n.Dead)
	}
	for _, q := range c.Queues {
		row(q.Queue.Name, q.Counts)
	}
	row("total", c.Total)
	_ = w.Flush()
	return b.String()
}

// Counter counts the jobs of every job queue of a deployment. Feed it the stack's batch reports
// (OnBatch) and the functions' output (ReadLine); Census reads the queues' depths. It is safe for
// concurrent use.
type Counter struct {
	sqs    QueueAPI
	queues []JobQueue
	byURL  map[string]int // queue URL to index

	mu      sync.Mutex
	seen    []map[string]bool // per queue: message ids received
	deleted []map[string]bool // per queue: message ids deleted after a run
	retried []map[string]bool // per queue: message ids that failed an attempt
	dead    map[string]bool   // message ids the runtime dead-lettered
}

// NewCounter returns a Counter for the job queues of d.
func NewCounter(client QueueAPI, d *deploy.Deployment) *Counter {
	c := &Counter{sqs: client, byURL: map[string]int{}, dead: map[string]bool{}}
	c.queues = JobQueues(d)
	for i, q := range c.queues {
		c.byURL[q.URL] = i
		c.seen = append(c.seen, map[string]bool{})
		c.deleted = append(c.deleted, map[string]bool{})
		c.retried = append(c.retried, map[string]bool{})
	}
	return c
}

// JobQueues returns d's job queues in name order: every queue a mapping reads or a stack output
// JobkitQueue<Name> names, with its dead-letter queue (the output JobkitDlq<Name>, else the
// redrive policy's target).
func JobQueues(d *deploy.Deployment) []JobQueue {
	names, dlqs := map[string]string{}, map[string]string{}
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			if n, ok := strings.CutPrefix(k, jobs.OutputQueuePrefix); ok && n != "" {
				names[v] = n
			}
			if n, ok := strings.CutPrefix(k, jobs.OutputDLQPrefix); ok && n != "" {
				dlqs[n] = v
			}
		}
	}
	isJob := map[string]bool{}
	for _, m := range d.Mappings {
		isJob[m.QueueURL] = true
	}
	var out []JobQueue
	for _, q := range d.Queues {
		name, named := names[q.URL]
		if !named && !isJob[q.URL] {
			continue
		}
		if !named {
			name = q.LogicalID
		}
		jq := JobQueue{Name: name, URL: q.URL, DLQURL: dlqs[name]}
		if jq.DLQURL == "" && q.DeadLetterARN != "" {
			if dq := d.QueueByARN(q.DeadLetterARN); dq != nil {
				jq.DLQURL = dq.URL
			}
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
	i, ok := c.byURL[rep.QueueURL]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range rep.MessageIDs {
		c.seen[i][id] = true
	}
	for _, id := range rep.Deleted {
		c.deleted[i][id] = true
	}
	failed := rep.Failed
	if rep.Verdict == esm.BatchFailed {
		failed = rep.MessageIDs
	}
	for _, id := range failed {
		c.retried[i][id] = true
	}
}

// ReadLine reads one line of a function's output ("[<function>] <JSON>", as devstack writes it)
// for the runtime's dead-letter lines.
func (c *Counter) ReadLine(line []byte) {
	if i := bytes.Index(line, []byte("] {")); i >= 0 && len(line) > 0 && line[0] == '[' {
		line = line[i+2:]
	}
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(msgDeadLettered)) {
		return
	}
	var l struct {
		Msg       string `json:"msg"`
		MessageID string `json:"message_id"`
	}
	if json.Unmarshal(line, &l) != nil || l.Msg != msgDeadLettered || l.MessageID == "" {
		return
	}
	c.mu.Lock()
	c.dead[l.MessageID] = true
	c.mu.Unlock()
}

// Census counts every job queue now.
func (c *Counter) Census(ctx context.Context) (*Census, error) {
	out := &Census{}
	for i, q := range c.queues {
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
		c.mu.Lock()
		deadByRuntime := 0
		for id := range c.deleted[i] {
			if c.dead[id] {
				deadByRuntime++
			}
		}
		qc.Succeeded = len(c.deleted[i]) - deadByRuntime
		qc.Retried = len(c.retried[i])
		seen := len(c.seen[i])
		c.mu.Unlock()
		out.Seen += seen
		if lost := seen - qc.Succeeded - qc.Dead - qc.Queued - qc.Running; lost > 0 {
			out.Lost += lost
		}
		out.Queues = append(out.Queues, qc)
		out.Total.Queued += qc.Queued
		out.Total.Running += qc.Running
		out.Total.Succeeded += qc.Succeeded
		out.Total.Retried += qc.Retried
		out.Total.Dead += qc.Dead
	}
	return out, nil
}

// depth returns a queue's waiting (visible and delayed) and in-flight message counts.
func (c *Counter) depth(ctx context.Context, url string) (waiting, inFlight int, err error) {
	out, err := c.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &url,
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("devrun: queue depth of %s: %w", url, err)
	}
	n := func(a sqstypes.QueueAttributeName) int {
		v, _ := strconv.Atoi(out.Attributes[string(a)])
		return v
	}
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages) + n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible), nil
}
