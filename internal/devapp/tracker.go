package devapp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/schedfire"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// SQSAPI is the part of the SQS client the Tracker calls (inspect.SQSAPI: it lists dead-letter
// queues with an inspect.Inspector).
type SQSAPI = inspect.SQSAPI

// DynamoDBAPI is the part of the DynamoDB client the Tracker calls.
type DynamoDBAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

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
	key = cmp.Or(key, t.ID)
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

	// book records, by job id, what the mappings and the runtime reported of each job.
	book *tally.Book

	mu       sync.Mutex
	jobs     map[string]*Tracked
	order    []*Tracked
	batchRet map[string]bool
	emails   map[string]int // EmailSentMessage lines per idempotency key
	done     map[string]int // TranscodeDoneMessage lines per job id
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
		byURL: map[string]*Queue{}, byFunc: map[string]*Queue{}, book: tally.NewBook(),
		jobs: map[string]*Tracked{}, batchRet: map[string]bool{}, emails: map[string]int{}, done: map[string]int{},
	}
	dlqs := map[string]string{}
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			if name, ok := strings.CutPrefix(k, contract.OutputQueuePrefix); ok && name != "" {
				t.byURL[v] = &Queue{Name: name, URL: v, MaxAttempts: contract.DefaultMaxAttempts}
			}
			if name, ok := strings.CutPrefix(k, contract.OutputDLQPrefix); ok && name != "" {
				dlqs[name] = v
			}
		}
	}
	if len(t.byURL) == 0 {
		return nil, errors.New("demo: the deployment has no stack output " + contract.OutputQueuePrefix + "<Name>: not a jobkit sample stack")
	}
	for _, q := range t.byURL {
		q.DLQURL = dlqs[q.Name]
		q.FIFO = awsarn.IsFIFO(q.URL)
		t.queues = append(t.queues, q)
	}
	rank := map[string]int{samplejobs.QueueEmail: 1, samplejobs.QueueLedger: 2, samplejobs.QueueTranscode: 3}
	for i, lane := range samplejobs.NotifyLanes {
		rank[contract.LaneQueueName(samplejobs.QueueNotify, lane)] = 4 + i
	}
	sort.Slice(t.queues, func(i, j int) bool {
		a, b := t.queues[i], t.queues[j]
		ra, rb := rank[a.Name], rank[b.Name]
		ra = cmp.Or(ra, 99)
		rb = cmp.Or(rb, 99)
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
		if n, err := strconv.Atoi(fn.Env[contract.EnvMaxAttempts]); err == nil && n > 0 {
			q.MaxAttempts = n
		}
		q.IdempotencyTable = fn.Env[contract.EnvIdempotencyTable]
		if q.DLQURL == "" {
			q.DLQURL = fn.Env[contract.EnvDLQURL]
		}
		t.byFunc[fn.Name] = q
	}
	for _, c := range d.Containers { // workers run as local processes (ContainerWorker)
		q := t.byURL[c.Env[contract.EnvQueueURL]]
		if q == nil {
			continue
		}
		name := devstack.ContainerName(c)
		q.Function = name
		if n, err := strconv.Atoi(c.Env[contract.EnvMaxAttempts]); err == nil && n > 0 {
			q.MaxAttempts = n
		}
		q.IdempotencyTable = c.Env[contract.EnvIdempotencyTable]
		if q.DLQURL == "" {
			q.DLQURL = c.Env[contract.EnvDLQURL]
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
		if u := t.QueueURL(contract.LaneQueueName(samplejobs.QueueNotify, lane)); u != "" {
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
	t.book.Track(j.ID, j.Kind, j.Queue)
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

// OnBatch reads an event source mapping's report (devstack.Config.OnBatch): what became of each
// delivery, and every job of a batch that failed whole (function error, timeout, invalid
// response) is retried.
func (t *Tracker) OnBatch(function string, rep esm.BatchReport) {
	if q := t.byURL[rep.QueueURL]; q != nil {
		t.book.OnBatch(q.Name, rep)
	}
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
	return &devrun.LineReader{W: w, Read: t.readLine}
}

// logLine is what the Tracker reads from a sample function's own JSON log line.
type logLine struct {
	Msg            string `json:"msg"`
	JobID          string `json:"job_id"`
	IdempotencyKey string `json:"idempotency_key"`
	BatchID        string `json:"batch_id"`
}

// readLine reads the runtime's outcomes (the Tracker's tally.Book) and the sample functions'
// own lines from one line of output.
func (t *Tracker) readLine(line []byte) {
	t.book.ReadLine(line)
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

// Effects are what the functions' output lines and the mappings' reports say about a job.
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
	last, _ := t.book.Job(j.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	key := j.Key
	key = cmp.Or(key, j.ID)
	e := Effects{
		FailedAttempts: last.Failures, BatchFailed: t.batchRet[j.ID], DeadReason: last.Reason,
		TranscodesDone: t.done[j.ID],
	}
	if j.Kind == samplejobs.KindSendEmail {
		e.EmailsSent = t.emails[key]
	}
	return e
}

func (t *Tracker) lookup(id string) *Tracked {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.jobs[id]
}
