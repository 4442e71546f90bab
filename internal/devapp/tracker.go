package devapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/internal/sampleapp/instrument"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/localstack/deploy"
	"github.com/jobkit-go/jobkit/localstack/devstack"
	"github.com/jobkit-go/jobkit/localstack/esm"
	"github.com/jobkit-go/jobkit/localstack/schedfire"
)

// SQSAPI is the part of the SQS client the Tracker calls (inspect.SQSAPI: it lists dead-letter
// queues with an inspect.Inspector).
type SQSAPI = inspect.SQSAPI

// DynamoDBAPI is the part of the DynamoDB client the Tracker calls.
type DynamoDBAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Messages of the jobs runtime's log lines the Tracker reads (jobs/handler.go).
const (
	msgWillRetry    = "job failed: will retry"
	msgDeadLettered = "job dead-lettered"
)

// Queue is a job queue of the deployment as the Tracker sees it.
type Queue struct {
	Name        string // the sample's queue name (stack output JobkitQueue<Name>)
	URL         string
	DLQURL      string
	FIFO        bool
	Function    string // the function its event source mapping invokes ("" if none)
	MaxAttempts int    // the function's JOBKIT_MAX_ATTEMPTS (default 5)
	// IdempotencyTable is the function's JOBKIT_IDEMPOTENCY_TABLE: when set, a job of this queue
	// has succeeded when its idempotency record is COMPLETED; otherwise when the function wrote
	// its output line (samplejobs.TranscodeDoneMessage).
	IdempotencyTable string
}

// Tracked is a job the Tracker follows: enqueued by the run, or sent by a schedule.
type Tracked struct {
	ID        string
	Kind      string
	Key       string // idempotency key ("" means ID)
	Queue     string // queue name
	GroupID   string
	Args      jobs.JobArgs      // nil for a scheduled tick
	Faults    instrument.Faults // the failures it asked for
	Schedule  string            // the schedule that sent it ("" if enqueued)
	Enqueued  time.Time
	sequence  int
	queueInfo *Queue
}

// IdempotencyKey returns the record key the idempotency middleware uses for the job.
func (t *Tracked) IdempotencyKey() string {
	key := t.Key
	if key == "" {
		key = t.ID
	}
	return t.Kind + "#" + key
}

// Tracker follows the jobs of a run on a deployment and counts, from the stack's own records,
// what became of them: idempotency records, the functions' output lines, the event source
// mappings' reports, the queues and the dead-letter queues with the attributes the runtime set.
// It is safe for concurrent use.
type Tracker struct {
	sqs       SQSAPI
	ddb       DynamoDBAPI
	inspector *inspect.Inspector
	queues    []*Queue
	byURL     map[string]*Queue
	byFunc    map[string]*Queue

	mu       sync.Mutex
	jobs     map[string]*Tracked
	order    []*Tracked
	failures map[string]int // "will retry" lines per job id
	batchRet map[string]bool
	emails   map[string]int // EmailSentMessage lines per idempotency key
	done     map[string]int // TranscodeDoneMessage lines per job id
	deadLogs map[string]string
	cbRuns   map[string]int // BatchDoneMessage lines per batch id
	stack    *devstack.Stack
}

// NewTracker returns a Tracker for the deployment's job queues: those named by a stack output
// JobkitQueue<Name> (and JobkitDlq<Name>), in the sample's order (Email, Ledger, Transcode, the
// Notify lanes in samplejobs.NotifyLanes order), then any other in name order.
func NewTracker(cfg aws.Config, d *deploy.Deployment) (*Tracker, error) {
	return newTracker(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), d)
}

func newTracker(sq SQSAPI, ddb DynamoDBAPI, d *deploy.Deployment) (*Tracker, error) {
	t := &Tracker{
		sqs: sq, ddb: ddb, inspector: inspect.New(aws.Config{}, func(o *inspect.Options) { o.SQS = sq }),
		byURL: map[string]*Queue{}, byFunc: map[string]*Queue{},
		jobs: map[string]*Tracked{}, failures: map[string]int{}, batchRet: map[string]bool{},
		emails: map[string]int{}, done: map[string]int{}, deadLogs: map[string]string{},
	}
	dlqs := map[string]string{}
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			if name, ok := strings.CutPrefix(k, jobs.OutputQueuePrefix); ok && name != "" {
				t.byURL[v] = &Queue{Name: name, URL: v, MaxAttempts: jobs.DefaultMaxAttempts}
			}
			if name, ok := strings.CutPrefix(k, jobs.OutputDLQPrefix); ok && name != "" {
				dlqs[name] = v
			}
		}
	}
	if len(t.byURL) == 0 {
		return nil, errors.New("demo: the deployment has no stack output " + jobs.OutputQueuePrefix + "<Name>: not a jobkit sample stack")
	}
	for _, q := range t.byURL {
		q.DLQURL = dlqs[q.Name]
		q.FIFO = jobs.IsFIFOQueue(q.URL)
		t.queues = append(t.queues, q)
	}
	rank := map[string]int{samplejobs.QueueEmail: 1, samplejobs.QueueLedger: 2, samplejobs.QueueTranscode: 3}
	for i, lane := range samplejobs.NotifyLanes {
		rank[jobs.LaneQueueName(samplejobs.QueueNotify, lane)] = 4 + i
	}
	sort.Slice(t.queues, func(i, j int) bool {
		a, b := t.queues[i], t.queues[j]
		ra, rb := rank[a.Name], rank[b.Name]
		if ra == 0 {
			ra = 99
		}
		if rb == 0 {
			rb = 99
		}
		if ra != rb {
			return ra < rb
		}
		return a.Name < b.Name
	})
	for _, m := range d.Mappings {
		q := t.byURL[m.QueueURL]
		fn := d.FunctionByName(m.Function)
		if q == nil || fn == nil || !m.Enabled {
			continue
		}
		q.Function = fn.Name
		if n, err := strconv.Atoi(fn.Env[jobs.EnvMaxAttempts]); err == nil && n > 0 {
			q.MaxAttempts = n
		}
		q.IdempotencyTable = fn.Env[jobs.EnvIdempotencyTable]
		if q.DLQURL == "" {
			q.DLQURL = fn.Env[jobs.EnvDLQURL]
		}
		t.byFunc[fn.Name] = q
	}
	for _, c := range d.Containers { // workers run as local processes (ContainerWorker)
		q := t.byURL[c.Env[jobs.EnvQueueURL]]
		if q == nil {
			continue
		}
		name := devstack.ContainerName(c)
		q.Function = name
		if n, err := strconv.Atoi(c.Env[jobs.EnvMaxAttempts]); err == nil && n > 0 {
			q.MaxAttempts = n
		}
		q.IdempotencyTable = c.Env[jobs.EnvIdempotencyTable]
		if q.DLQURL == "" {
			q.DLQURL = c.Env[jobs.EnvDLQURL]
		}
		t.byFunc[name] = q
	}
	return t, nil
}

// Queues returns the job queues, in display order.
func (t *Tracker) Queues() []Queue {
	out := make([]Queue, len(t.queues))
	for i, q := range t.queues {
		out[i] = *q
	}
	return out
}

// QueueURL returns the URL of the named queue, or "".
func (t *Tracker) QueueURL(name string) string {
	for _, q := range t.queues {
		if q.Name == name {
			return q.URL
		}
	}
	return ""
}

// Routes returns the jobs client's routing for the sample kinds: kind to queue URL.
func (t *Tracker) Routes() map[string]string {
	routes := map[string]string{}
	for kind, name := range samplejobs.Queues {
		if u := t.QueueURL(name); u != "" {
			routes[kind] = u
		}
	}
	return routes
}

// Lanes returns the jobs client's priority lanes for the sample's queue with lanes (Notify): the
// default lane's URL → lane name → URL (jobs.ClientOptions.Lanes); nil if it is not deployed.
func (t *Tracker) Lanes() map[string]map[string]string {
	lanes := map[string]string{}
	for _, lane := range samplejobs.NotifyLanes {
		if u := t.QueueURL(jobs.LaneQueueName(samplejobs.QueueNotify, lane)); u != "" {
			lanes[lane] = u
		}
	}
	def := lanes[samplejobs.NotifyLanes[0]]
	if def == "" {
		return nil
	}
	return map[string]map[string]string{def: lanes}
}

// Attach gives the Tracker the running stack whose event source mappings it reports on.
func (t *Tracker) Attach(s *devstack.Stack) {
	t.mu.Lock()
	t.stack = s
	t.mu.Unlock()
}

// Add tracks an enqueued job. res is its enqueue result; a failed one (res.Err) is not tracked.
// args are the args enqueued: an instrument.Faulty is tracked as its Args and Faults.
func (t *Tracker) Add(res jobs.EnqueueResult, args jobs.JobArgs, key, groupID string) {
	if res.Err != nil || res.ID == "" {
		return
	}
	var faults instrument.Faults
	if f, ok := args.(instrument.Faulty); ok {
		args, faults = f.Args, f.Faults
	}
	q := t.byURL[res.QueueURL]
	t.add(&Tracked{ID: res.ID, Kind: res.Kind, Key: key, GroupID: groupID, Args: args, Faults: faults, Enqueued: time.Now(), queueInfo: q})
}

func (t *Tracker) add(j *Tracked) {
	if j.queueInfo != nil {
		j.Queue = j.queueInfo.Name
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.jobs[j.ID]; ok {
		return
	}
	j.sequence = len(t.order)
	t.jobs[j.ID] = j
	t.order = append(t.order, j)
}

// OnFire tracks a schedule's tick (devstack.Config.OnFire) sent to one of the job queues.
func (t *Tracker) OnFire(f schedfire.Firing) {
	if f.Err != nil || f.JobID == "" {
		return
	}
	q := t.byURL[f.QueueURL]
	if q == nil {
		return
	}
	var env jobs.Envelope
	_ = json.Unmarshal([]byte(f.Body), &env)
	t.add(&Tracked{ID: f.JobID, Kind: f.Kind, Key: env.Key, Schedule: f.Schedule, Enqueued: time.Now(), queueInfo: q})
}

// OnBatch reads an event source mapping's report (devstack.Config.OnBatch): every job of a
// batch that failed whole (function error, timeout, invalid response) is retried.
func (t *Tracker) OnBatch(function string, rep esm.BatchReport) {
	if rep.Verdict != esm.BatchFailed {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, body := range rep.Bodies {
		var env jobs.Envelope
		if json.Unmarshal([]byte(body), &env) == nil && env.ID != "" {
			t.batchRet[env.ID] = true
		}
	}
}

// Output returns a writer for devstack.Config.Output: it reads the functions' output lines
// ("[<function>] <JSON>") for the Tracker and passes them on to w (nil: discards).
func (t *Tracker) Output(w io.Writer) io.Writer {
	if w == nil {
		w = io.Discard
	}
	return &outputReader{t: t, w: w}
}

type outputReader struct {
	t  *Tracker
	w  io.Writer
	mu sync.Mutex
	bf []byte
}

func (o *outputReader) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.bf = append(o.bf, p...)
	for {
		i := bytes.IndexByte(o.bf, '\n')
		if i < 0 {
			break
		}
		o.t.readLine(o.bf[:i])
		o.bf = o.bf[i+1:]
	}
	o.mu.Unlock()
	return o.w.Write(p)
}

// logLine is what the Tracker reads from a function's JSON log line.
type logLine struct {
	Msg            string `json:"msg"`
	JobID          string `json:"job_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Reason         string `json:"reason"`
	BatchID        string `json:"batch_id"`
}

func (t *Tracker) readLine(line []byte) {
	if i := bytes.Index(line, []byte("] {")); i >= 0 && line[0] == '[' {
		line = line[i+2:]
	}
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var l logLine
	if json.Unmarshal(line, &l) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch l.Msg {
	case msgWillRetry:
		t.failures[l.JobID]++
	case msgDeadLettered:
		t.deadLogs[l.JobID] = l.Reason
	case samplejobs.EmailSentMessage:
		t.emails[l.IdempotencyKey]++
	case samplejobs.TranscodeDoneMessage:
		t.done[l.JobID]++
	case samplejobs.BatchDoneMessage:
		if t.cbRuns == nil {
			t.cbRuns = map[string]int{}
		}
		t.cbRuns[l.BatchID]++
	}
}

// BatchCallbacks returns the runs of batch callbacks the functions' output reports, by batch id.
func (t *Tracker) BatchCallbacks() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.cbRuns))
	for k, v := range t.cbRuns {
		out[k] = v
	}
	return out
}

// Jobs returns the tracked jobs in the order they were enqueued or sent.
func (t *Tracker) Jobs() []*Tracked {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Tracked(nil), t.order...)
}

// Effects are what the functions' output lines say about a job.
type Effects struct {
	// FailedAttempts is the number of attempts the runtime logged as failed and to be retried.
	FailedAttempts int
	// BatchFailed is set when a batch holding the job failed whole (error, timeout).
	BatchFailed bool
	// EmailsSent counts the email lines for the job's idempotency key (SendEmail jobs).
	EmailsSent int
	// TranscodesDone counts the transcode output lines for the job (TranscodeVideo jobs).
	TranscodesDone int
	// DeadReason is the reason of the runtime's dead-letter line, if any.
	DeadReason string
}

// Effects returns what the functions' output says about the job so far.
func (t *Tracker) Effects(j *Tracked) Effects {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := j.Key
	if key == "" {
		key = j.ID
	}
	e := Effects{
		FailedAttempts: t.failures[j.ID], BatchFailed: t.batchRet[j.ID], DeadReason: t.deadLogs[j.ID],
		TranscodesDone: t.done[j.ID],
	}
	if j.Kind == samplejobs.KindSendEmail {
		e.EmailsSent = t.emails[key]
	}
	return e
}

// Counts are the numbers of jobs in each state.
type Counts struct {
	Enqueued  int // jobs enqueued or sent by a schedule
	Running   int // messages in an invocation now (the event source mappings' count)
	Pending   int // messages in the queue: waiting, in flight or delayed (SQS's approximate counts)
	Succeeded int
	Retried   int // jobs that failed at least one attempt
	Dead      int // jobs in the dead-letter queue
}

func (c *Counts) add(o Counts) {
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
	// Lost is Unaccounted less the messages still in the job queues (Full only).
	Lost int
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
	return c, nil
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
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	}()
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

// total adds the queues' counts to c, and works out the lost (full census) or unaccounted jobs.
func (t *Tracker) total(c *Census, per map[*Queue]*Counts, lists []*inspect.DeadList, full bool) {
	pending := 0
	for i, q := range t.queues {
		n := per[q]
		if full && q.DLQURL != "" && lists[i] != nil {
			n.Dead += max(0, int(lists[i].Approximate)-lists[i].Scanned)
		}
		c.Queues = append(c.Queues, QueueCensus{Name: q.Name, Counts: *n})
		c.Total.add(*n)
		pending += n.Pending
	}
	if full {
		c.Lost = max(0, c.Unaccounted-pending-c.Unlisted)
	} else {
		c.Unaccounted = max(0, c.Total.Enqueued-c.Total.Succeeded-c.Total.Dead)
	}
}

func (t *Tracker) lookup(id string) *Tracked {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jobs[id]
}

// depth returns a queue's visible + in-flight + delayed messages, and the in-flight ones.
func (t *Tracker) depth(ctx context.Context, url string) (total, inFlight int, err error) {
	out, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("attributes of %s: %w", jobs.QueueName(url), err)
	}
	for k, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		total += i
		if k == string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible) {
			inFlight = i
		}
	}
	return total, inFlight, nil
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
