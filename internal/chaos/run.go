package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/offline/tally"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// Defaults of Config.
const (
	DefaultThrottleRate      = 0.05
	DefaultKillRate          = 0.02
	DefaultLongJobVisibility = 20 * time.Second
	DefaultEmailVisibility   = 10 * time.Second
	DefaultTimeout           = 11 * time.Minute
	DefaultLatencyRate       = 0.05
	DefaultMaxLatency        = 400 * time.Millisecond
	DefaultRedriveTimeout    = 3 * time.Minute
)

// Config configures Run. The zero value of a field means its default.
type Config struct {
	// AWS is the emulator's configuration (BaseEndpoint set). Required.
	AWS aws.Config
	// CDKOut, ModuleDir and BuildDir locate the cloud assembly and the functions' sources and
	// builds (see deploy.Options).
	CDKOut, ModuleDir, BuildDir string
	// Plan sizes the jobs; its LongJobSeconds is set to three times LongJobVisibility.
	Plan PlanConfig
	// ThrottleRate is the share of AWS calls the proxy answers with a throttling error; default
	// 0.05, negative for none.
	ThrottleRate float64
	// KillRate is the share of email and ledger invocations whose process is killed (SIGKILL)
	// while it works on the batch — every round(1/KillRate)-th invocation; default 0.02,
	// negative for none.
	KillRate float64
	// ContainerKillRate is the share of the short transcodes' first starts (Plan.Transcodes) whose
	// container process is killed (SIGKILL) a few milliseconds in — every
	// round(1/ContainerKillRate)-th first start; the process is restarted, the job's message comes back
	// after the queue's visibility timeout. Default DefaultContainerKillRate, negative for none.
	ContainerKillRate float64
	// NoEmailRateLimit runs the email function without its rate limit (instrument.EnvNoRateLimit).
	// make chaos sets it: with the limit, its 10,000 jobs spend the emulator's requests on
	// snoozes for tokens (twice the calls of a run without) and outlast the time bound; the
	// smaller runs of the tests keep the limit, and the ratelimit bench measures it.
	NoEmailRateLimit bool
	// LongJobVisibility is the transcode queue's visibility timeout during the run (and so the
	// runtime's heartbeat period base); the long job runs three times as long. Default 20 s: the
	// sample stack's 10 minutes would make a 30-minute job.
	LongJobVisibility time.Duration
	// EmailVisibility is the email queue's visibility timeout during the run (and the email
	// runtime's view of it). Default DefaultEmailVisibility: the sample's minute would make each
	// delivery of a crash loop (Plan.CrashLoops) and of a killed batch wait a minute; its jobs
	// are quick, and the heartbeat extends a batch that runs longer.
	EmailVisibility time.Duration
	// LatencyRate is the share of AWS calls the proxy holds back before forwarding them, each
	// for a random time up to MaxLatency, as a slow AWS answer; defaults 0.05 and 400 ms,
	// negative rate for none.
	LatencyRate float64
	MaxLatency  time.Duration
	// LedgerTimeout, if set, replaces the ledger function's timeout during the run (the
	// sample's is 30 s), e.g. so that a posting that overruns its deadline
	// (PlanConfig.OverrunRate) holds its batch a few seconds, not half a minute. Default: the
	// sample's.
	LedgerTimeout time.Duration
	// Timeout bounds the wait for the jobs to settle; default 11 minutes. A run that has not
	// settled by then is evaluated as it stands (unfinished jobs count as lost).
	Timeout time.Duration
	// NoRedrive leaves the dead-letter queues as the jobs left them. By default, once the jobs
	// have settled, the run lists its dead-letter queues, redrives them to their queues with the
	// Inspector (as an operator would: the manual move where the emulator lacks
	// StartMessageMoveTask) under the same faults, and waits up to RedriveTimeout (default
	// DefaultRedriveTimeout) for the redriven jobs to settle: each must run again or be back in
	// a dead-letter queue (Report.RedriveLost).
	NoRedrive      bool
	RedriveTimeout time.Duration
	// Seed makes the faults' choices repeatable (the plan has its own); default 1.
	Seed uint64
	// FunctionOutput receives the functions' output; default discards.
	FunctionOutput io.Writer
	// Progress receives a progress line every 10 s; default discards.
	Progress io.Writer
	// Logger receives the stack's events; default discards.
	Logger *slog.Logger
	// FunctionLogLevel, if set, is the functions' AWS_LAMBDA_LOG_LEVEL (DEBUG logs every job).
	FunctionLogLevel string
	// Batches fan-out batches of BatchMembers emails each run besides the plan, their members
	// under the same faults; each must call back exactly once. Defaults DefaultBatches and
	// DefaultBatchMembers; negative Batches for none.
	Batches, BatchMembers int
}

func (c Config) withDefaults() Config {
	c.ThrottleRate = cmp.Or(c.ThrottleRate, DefaultThrottleRate)
	c.KillRate = cmp.Or(c.KillRate, DefaultKillRate)
	if c.LongJobVisibility <= 0 {
		c.LongJobVisibility = DefaultLongJobVisibility
	}
	if c.EmailVisibility <= 0 {
		c.EmailVisibility = DefaultEmailVisibility
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	c.LatencyRate = cmp.Or(c.LatencyRate, DefaultLatencyRate)
	c.ContainerKillRate = cmp.Or(c.ContainerKillRate, DefaultContainerKillRate)
	if c.MaxLatency <= 0 {
		c.MaxLatency = DefaultMaxLatency
	}
	c.Seed = cmp.Or(c.Seed, 1)
	if c.RedriveTimeout <= 0 {
		c.RedriveTimeout = DefaultRedriveTimeout
	}
	c.Batches = cmp.Or(c.Batches, DefaultBatches)
	if c.BatchMembers <= 0 {
		c.BatchMembers = DefaultBatchMembers
	}
	if c.FunctionOutput == nil {
		c.FunctionOutput = io.Discard
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	c.Plan.LongJobSeconds = 3 * int(c.LongJobVisibility/time.Second)
	return c
}

// Run runs the plan on the sample stack under faults and returns the report. The error is about
// the run itself (deploy, enqueue, reading the state); whether the invariants held is
// Report.Check. Run removes what it deployed and leaves no process behind.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	plan, err := NewPlan(cfg.Plan)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, plan: plan, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6b696c6c)), longDone: make(chan struct{}), book: tally.NewBook()}
	for _, j := range plan.All() {
		r.book.Track(j.ID, j.Args.Kind(), samplejobs.Queues[j.Args.Kind()])
	}
	r.out = newOutputWatch(cfg.FunctionOutput, r.book)
	r.out.onStart, r.out.onDone = r.onJobStart, r.onJobDone
	stack, err := StartStack(ctx, StackConfig{
		AWS: cfg.AWS, CDKOut: cfg.CDKOut, ModuleDir: cfg.ModuleDir, BuildDir: cfg.BuildDir,
		Proxy:        &faultproxy.Options{ThrottleRate: max(cfg.ThrottleRate, 0), Seed: cfg.Seed, Latency: r.latency},
		Instrumented: true, Effects: true, Customize: r.customize,
		OnBatch: r.onBatch, OnInvoke: r.onInvoke, Output: r.out, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := stack.Close(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(cfg.Progress, "chaos: cleanup: %v\n", err)
		}
	}()
	r.stack = stack
	r.devMu.Lock()
	r.dev = stack.Dev()
	r.devMu.Unlock()
	return r.run(ctx)
}

// pids returns the function processes running now.
func (r *runner) pids() []int {
	r.devMu.Lock()
	defer r.devMu.Unlock()
	if r.dev == nil {
		return nil
	}
	return r.dev.PIDs()
}

type runner struct {
	cfg   Config
	plan  *Plan
	stack *Stack
	out   *outputWatch
	// book records what became of each job (package tally); queueNames names the job queues by
	// URL for it (set before the mappings start, read only after).
	book       *tally.Book
	queueNames map[string]string

	rngMu sync.Mutex
	rng   *rand.Rand

	devMu sync.Mutex
	dev   *devstack.Stack

	batchMu       sync.Mutex
	fifoBatches   []esm.BatchReport
	failedBatches [][]string // the ids each partly failed batch listed, in the order reported

	slowed     atomic.Int64 // calls the proxy held back
	duplicates atomic.Int64 // envelopes sent a second time

	// The transcode container (ContainerName), the long job's end, the short transcodes' starts
	// and the kills of the container's process (container.go).
	container                                             string
	longDone                                              chan struct{}
	longDoneOnce                                          sync.Once
	transcodeStarts, transcodeFirstStarts, containerKills atomic.Int64

	killable                    map[string]bool // function names whose processes may be killed
	killableInvocations         atomic.Int64
	invocations, kills, crashes atomic.Int64
	enqueued                    atomic.Int64

	batchIDs []string // the fan-out batches opened
}

// shortenVisibility sets the visibility timeout of kind's queue to vt, and its worker's view of it.
func (r *runner) shortenVisibility(ctx context.Context, s *Stack, kind string, vt time.Duration) error {
	env := s.WorkerEnv(kind)
	if env == nil {
		return fmt.Errorf("chaos: the deployment has no worker for %s", kind)
	}
	secs := strconv.Itoa(int(vt / time.Second))
	_, err := sqs.NewFromConfig(s.Direct).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(env[contract.EnvQueueURL]),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): secs},
	})
	if err != nil {
		return fmt.Errorf("chaos: set the visibility timeout of %s's queue: %w", kind, err)
	}
	env[contract.EnvVisibilityTimeout] = secs
	return nil
}

// customize shortens the email queue's visibility timeout (Config.EmailVisibility) and the transcode queue's visibility timeout (and the runtime's view of it) so
// that a job three times as long fits the run, sets the ledger function's timeout if asked
// (Config.LedgerTimeout), enqueues the overrun groups (enqueueBursts) and picks the functions
// whose processes may die.
func (r *runner) customize(ctx context.Context, s *Stack) error {
	long := s.WorkerEnv(samplejobs.KindTranscodeVideo)
	if long == nil {
		return errors.New("chaos: the deployment has no transcode function or container")
	}
	vt := strconv.Itoa(int(r.cfg.LongJobVisibility / time.Second))
	_, err := sqs.NewFromConfig(s.Direct).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(long[contract.EnvQueueURL]),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): vt},
	})
	if err != nil {
		return fmt.Errorf("chaos: set the transcode queue's visibility timeout: %w", err)
	}
	long[contract.EnvVisibilityTimeout] = vt
	if err := r.shortenVisibility(ctx, s, samplejobs.KindSendEmail, r.cfg.EmailVisibility); err != nil {
		return err
	}
	if r.cfg.NoEmailRateLimit {
		if err := s.LeaveOutEmailRateLimit(); err != nil {
			return err
		}
	}
	ledger := s.Worker(samplejobs.KindPostLedger)
	if ledger == nil {
		return errors.New("chaos: the deployment has no ledger function")
	}
	if r.cfg.LedgerTimeout > 0 {
		ledger.Timeout = r.cfg.LedgerTimeout
	}
	if r.cfg.FunctionLogLevel != "" {
		for i := range s.Deployment.Functions {
			s.Deployment.Functions[i].Env[contract.EnvLogLevel] = r.cfg.FunctionLogLevel
		}
	}
	if err := r.enqueueBursts(ctx, s); err != nil {
		return err
	}
	r.findContainer(s)
	r.queueNames = map[string]string{}
	for _, kind := range jobKinds {
		r.queueNames[s.QueueURL(kind)] = samplejobs.Queues[kind]
	}
	r.killable = map[string]bool{}
	for _, kind := range []string{samplejobs.KindSendEmail, samplejobs.KindPostLedger} {
		f := s.Worker(kind)
		if f == nil {
			return fmt.Errorf("chaos: the deployment has no function for %s", kind)
		}
		r.killable[f.Name] = true
	}
	return nil
}

func (r *runner) float() float64 {
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.rng.Float64()
}

// onInvoke kills the process of a share of the email and ledger invocations (every
// round(1/KillRate)-th one) a few milliseconds after it took the batch, while it works on it. The
// long job's process is spared: its one run is what is being checked.
func (r *runner) onInvoke(function, _ string, pid int) {
	if !r.killable[function] || r.cfg.KillRate <= 0 {
		return
	}
	every := int64(math.Round(1 / r.cfg.KillRate))
	if r.killableInvocations.Add(1)%every != every/2 {
		return
	}
	delay := time.Duration(2+r.float()*30) * time.Millisecond
	r.kills.Add(1)
	go func() {
		time.Sleep(delay)
		// Only a process the stack still runs: never a pid the system may have given away since.
		if !slices.Contains(r.pids(), pid) {
			return
		}
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill() // SIGKILL
		}
	}()
}

// enqueueBursts enqueues the ledger groups with an overrunning posting (Plan.LedgerBursts), one
// group after the other, before the functions and their event source mappings start: each
// group's postings then lie together on the queue, the first receive of a group hands them out
// in one batch, and the postings behind the overrunning first one meet the soft deadline.
// (Enqueued while the mappings poll, the group's first posting would be received alone.)
func (r *runner) enqueueBursts(ctx context.Context, s *Stack) error {
	bursts, _ := r.plan.LedgerBursts()
	if len(bursts) == 0 {
		return nil
	}
	producer, err := s.Producer()
	if err != nil {
		return err
	}
	for _, b := range bursts {
		if err := r.enqueue(ctx, producer, b, &r.enqueued); err != nil {
			return err
		}
	}
	return nil
}

// latency is the proxy's Latency: a share (LatencyRate) of all calls wait up to MaxLatency.
func (r *runner) latency(string) time.Duration {
	if r.cfg.LatencyRate <= 0 || r.float() >= r.cfg.LatencyRate {
		return 0
	}
	r.slowed.Add(1)
	return time.Duration(r.float() * float64(r.cfg.MaxLatency))
}

func (r *runner) onBatch(_ string, rep esm.BatchReport) {
	if name, ok := r.queueNames[rep.QueueURL]; ok {
		r.book.OnBatch(name, rep)
	}
	if rep.Outcome != 0 {
		r.invocations.Add(1)
	}
	if len(rep.Failed) > 0 {
		r.batchMu.Lock()
		r.failedBatches = append(r.failedBatches, rep.Failed)
		r.batchMu.Unlock()
	}
	if rep.Outcome == lambdaruntime.Crash {
		r.crashes.Add(1)
	}
	// The FIFO batches, to show how a group's jobs were handed out should its order break.
	var groups []string
	for _, body := range rep.Bodies {
		var env struct {
			ID   string `json:"id"`
			Args struct {
				Account string `json:"account"`
			} `json:"args"`
		}
		if json.Unmarshal([]byte(body), &env) == nil && env.Args.Account != "" {
			groups = append(groups, env.Args.Account)
		}
	}
	if len(groups) == 0 {
		return
	}
	r.batchMu.Lock()
	defer r.batchMu.Unlock()
	r.fifoBatches = append(r.fifoBatches, rep)
}

// batchesOf describes the FIFO batches that held jobs of account, one line each.
func (r *runner) batchesOf(account string) []string {
	r.batchMu.Lock()
	defer r.batchMu.Unlock()
	var lines []string
	for _, rep := range r.fifoBatches {
		var ids []string
		for _, body := range rep.Bodies {
			if strings.Contains(body, `"account":"`+account+`"`) {
				var env struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal([]byte(body), &env)
				ids = append(ids, env.ID)
			}
		}
		if len(ids) > 0 {
			lines = append(lines, fmt.Sprintf("%s worker=%d size=%d outcome=%s verdict=%s failed=%d deleted=%d jobs=%v",
				rep.ReceivedAt.Format("15:04:05.000"), rep.Worker, len(rep.Bodies), rep.Outcome, rep.Verdict, len(rep.Failed), len(rep.Deleted), ids))
		}
	}
	return lines
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	producer, err := r.stack.Producer()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := r.enqueueAll(ctx, producer); err != nil {
		return nil, err
	}
	if err := r.enqueueBatches(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(r.cfg.Progress, "chaos: %d jobs enqueued (%d of them twice) in %.1fs\n", r.enqueued.Load(), r.duplicates.Load(), time.Since(start).Seconds())

	settled := r.wait(ctx, start, start.Add(r.cfg.Timeout))
	r.waitCallbacks(ctx)
	elapsed := time.Since(start)
	if !settled {
		fmt.Fprintf(r.cfg.Progress, "chaos: jobs still pending after %s; evaluating as it stands\n", r.cfg.Timeout)
	}
	redriven, err := r.redriveAndWait(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.stack.Stop(); err != nil {
		fmt.Fprintf(r.cfg.Progress, "chaos: stop: %v\n", err)
	}
	// The state is read even when ctx has ended (an interrupt, the caller's deadline): the report
	// then says what the run reached.
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	st, err := r.readState(readCtx)
	if err != nil {
		return nil, err
	}
	st.Redrive = redriven
	rep := Evaluate(r.plan, st, r.stack.MaxAttempts())
	for _, g := range rep.OrderViolationGroups {
		account, _, _ := strings.Cut(g, " ")
		fmt.Fprintf(r.cfg.Progress, "chaos: batches of %s (order broken):\n", account)
		for _, line := range r.batchesOf(account) {
			fmt.Fprintf(r.cfg.Progress, "chaos:   %s\n", line)
		}
	}
	rep.Seconds = int(elapsed.Round(time.Second) / time.Second)
	r.measured(&rep)
	r.countBatches(&rep, st.Effects)
	return &rep, nil
}

// measured fills in what the run measured rather than read from the state.
func (r *runner) measured(rep *Report) {
	rep.DuplicateDeliveries = int(r.duplicates.Load())
	rep.DeadlineBatches = r.deadlineBatches()
	rep.Faults.APIs = r.stack.Proxy.Stats()
	total := rep.Faults.APIs.Total("")
	rep.Faults.Calls, rep.Faults.Throttled, rep.Faults.Slowed = total.Requests, total.Throttled, r.slowed.Load()
	rep.Faults.Invocations, rep.Faults.Kills, rep.Faults.Crashes = r.invocations.Load(), r.kills.Load(), r.crashes.Load()
	rep.Faults.TranscodeStarts, rep.Faults.ContainerKills = r.transcodeStarts.Load(), r.containerKills.Load()
	rep.Faults.TransientFailures = r.out.failures.Load()
	rep.Faults.NotStarted = r.out.notStartedTotal()
}

// deadlineBatches counts the batches that listed a record the runtime said it did not start
// because the batch had reached its deadline: each such line is matched, by message id, to the
// first partly failed batch not yet matched that listed the message.
func (r *runner) deadlineBatches() int {
	left := r.out.notStartedByMessage()
	r.batchMu.Lock()
	defer r.batchMu.Unlock()
	n := 0
	for _, failed := range r.failedBatches {
		hit := false
		for _, id := range failed {
			if left[id] > 0 {
				left[id]--
				hit = true
			}
		}
		if hit {
			n++
		}
	}
	return n
}

// enqueueAll enqueues the plan as services would, while the stack runs: the long job, then the
// ledger postings (in order per account; the groups with an overrunning posting are on the queue
// already, see enqueueBursts) alongside the emails, 500 at a time; after each 500 emails, the
// envelopes of those planned duplicated are sent again with the same ids.
func (r *runner) enqueueAll(ctx context.Context, producer *jobs.Client) error {
	if err := r.enqueue(ctx, producer, []*PlannedJob{&r.plan.Long}, &r.enqueued); err != nil {
		return err
	}
	errc := make(chan error, 3)
	go func() {
		errc <- r.enqueueTranscodes(ctx, func(batch []*PlannedJob) error { return r.enqueue(ctx, producer, batch, &r.enqueued) })
	}()
	go func() {
		_, rest := r.plan.LedgerBursts() // the bursts are on the queue already (customize)
		errc <- r.enqueue(ctx, producer, rest, &r.enqueued)
	}()
	go func() {
		var emails []*PlannedJob
		for i := range r.plan.Email {
			emails = append(emails, &r.plan.Email[i])
		}
		for i := 0; i < len(emails); i += 500 {
			chunk := emails[i:min(i+500, len(emails))]
			if err := r.enqueue(ctx, producer, chunk, &r.enqueued); err != nil {
				errc <- err
				return
			}
			var again []*PlannedJob
			for _, j := range chunk {
				if j.Duplicate {
					again = append(again, j)
				}
			}
			if err := r.enqueue(ctx, producer, again, &r.duplicates); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	return errors.Join(<-errc, <-errc, <-errc)
}

// enqueue sends batch through the producer, re-sending what failed (in order, so a FIFO group's
// later jobs wait for its earlier ones) until all are on their queues, counting each job sent.
func (r *runner) enqueue(ctx context.Context, producer *jobs.Client, batch []*PlannedJob, sent *atomic.Int64) error {
	pending := batch
	for attempt := 1; len(pending) > 0; attempt++ {
		jobsIn := make([]jobs.BatchJob, len(pending))
		for i, j := range pending {
			jobsIn[i] = jobs.BatchJob{Args: j.Enqueued(), Opts: &jobs.EnqueueOpts{ID: j.ID, GroupID: j.Group}}
		}
		results, err := producer.EnqueueBatch(ctx, jobsIn)
		var again []*PlannedJob
		for i, res := range results {
			if res.Err != nil {
				again = append(again, pending[i])
			} else {
				sent.Add(1)
			}
		}
		if len(again) > 0 && ctx.Err() != nil {
			return fmt.Errorf("chaos: %d job(s) not enqueued: %w", len(again), ctx.Err())
		}
		if len(again) > 0 && attempt >= 20 {
			return fmt.Errorf("chaos: %d job(s) not enqueued after %d attempts: %w", len(again), attempt, err)
		}
		pending = again
		if len(pending) > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
	}
	return nil
}

// jobKinds are the kinds of the plan's jobs, one per job queue.
var jobKinds = []string{samplejobs.KindSendEmail, samplejobs.KindPostLedger, samplejobs.KindTranscodeVideo}

// wait polls the queues (directly, without faults) until every queue is empty twice in a row,
// or deadline passes. It reports whether the jobs settled.
func (r *runner) wait(ctx context.Context, start, deadline time.Time) bool {
	client := sqs.NewFromConfig(r.stack.Direct)
	var queues []string
	for _, kind := range jobKinds {
		queues = append(queues, r.stack.QueueURL(kind))
	}
	lastProgress := time.Now()
	empty := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Second)
		depth := 0
		var parts []string
		for _, q := range queues {
			n, err := queueDepth(ctx, client, q)
			if err != nil {
				n = 1 // unknown: not settled
			}
			depth += n
			parts = append(parts, fmt.Sprint(n))
		}
		if depth == 0 {
			empty++
			if empty >= 2 {
				return true
			}
		} else {
			empty = 0
		}
		if time.Since(lastProgress) >= 10*time.Second {
			lastProgress = time.Now()
			px := r.stack.Proxy.Stats().Total("")
			fmt.Fprintf(r.cfg.Progress, "chaos: %4.0fs pending email/ledger/transcode=%v invocations=%d kills=%d crashes=%d aws_calls=%d throttled=%d\n",
				time.Since(start).Seconds(), parts, r.invocations.Load(), r.kills.Load(), r.crashes.Load(), px.Requests, px.Throttled)
		}
	}
	return false
}

// readState reads what the run left: the effects table, the messages left on the job queues, the
// dead-letter queues (drained), the ledger's applied postings, and what the run last knew of each
// job.
func (r *runner) readState(ctx context.Context) (State, error) {
	db := dynamodb.NewFromConfig(r.stack.Direct)
	st := State{Dead: map[string]int{}, Applied: map[string][]string{}, Runs: r.out.runsByJob(),
		Last: map[string]tally.Job{}, Left: map[string]int{}, UnknownDead: map[string]int{}}
	for _, j := range r.book.Jobs() {
		st.Last[j.ID] = j
	}
	var err error
	st.Effects, err = instrument.ReadEffects(ctx, db, r.stack.EffectsTable)
	if err != nil {
		return st, err
	}
	client := sqs.NewFromConfig(r.stack.Direct)
	for _, kind := range jobKinds {
		name := samplejobs.Queues[kind]
		if st.Left[name], err = queueDepth(ctx, client, r.stack.QueueURL(kind)); err != nil {
			return st, fmt.Errorf("chaos: read queue %s: %w", name, err)
		}
		if st.UnknownDead[name], err = drainDead(ctx, client, r.stack.DLQURL(kind), st.Dead); err != nil {
			return st, err
		}
	}
	ledger := r.stack.env(samplejobs.KindPostLedger, samplejobs.EnvLedgerTable)
	var startKey map[string]ddbtypes.AttributeValue
	for {
		page, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(ledger), ExclusiveStartKey: startKey, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return st, fmt.Errorf("chaos: read the ledger: %w", err)
		}
		for _, item := range page.Items {
			acct, _ := item[samplejobs.LedgerAccountAttr].(*ddbtypes.AttributeValueMemberS)
			list, _ := item[samplejobs.LedgerAppliedAttr].(*ddbtypes.AttributeValueMemberL)
			if acct == nil || list == nil {
				continue
			}
			for _, v := range list.Value {
				if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
					st.Applied[acct.Value] = append(st.Applied[acct.Value], s.Value)
				}
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return st, nil
		}
		startKey = page.LastEvaluatedKey
	}
}

// queueDepth is the number of messages visible, in flight or delayed on queue (Inspector.Depth).
func queueDepth(ctx context.Context, client *sqs.Client, queue string) (int, error) {
	st, err := inspect.New(aws.Config{}, func(o *inspect.Options) { o.SQS = client }).Depth(ctx, queue)
	return int(st.Total()), err
}

// drainDead receives and deletes every message of a dead-letter queue, counting them by job id,
// and returns the number whose body names no job. It goes on until the queue reports no message
// left. Messages are received for 10 s only: a receive whose answer was lost (and that the SDK
// sent again) hides its messages that long, and drainDead waits up to 40 s for such messages to
// come back.
func drainDead(ctx context.Context, client *sqs.Client, queue string, dead map[string]int) (unknown int, err error) {
	var stuckSince time.Time
	for empty := 0; ; {
		if empty >= 3 {
			n, err := queueDepth(ctx, client, queue)
			if err != nil {
				return unknown, fmt.Errorf("chaos: read dead-letter queue %s: %w", queue, err)
			}
			if n == 0 {
				return unknown, nil
			}
			if stuckSince.IsZero() {
				stuckSince = time.Now()
			}
			if time.Since(stuckSince) > 40*time.Second {
				return unknown, fmt.Errorf("chaos: dead-letter queue %s still holds %d message(s) it does not hand out", queue, n)
			}
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, VisibilityTimeout: 10})
		if err != nil {
			return unknown, fmt.Errorf("chaos: read dead-letter queue %s: %w", queue, err)
		}
		if len(out.Messages) == 0 {
			empty++
			if empty > 3 {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		empty, stuckSince = 0, time.Time{}
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			var env struct {
				ID string `json:"id"`
			}
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &env) != nil || env.ID == "" {
				env.ID = "undecodable:" + aws.ToString(m.MessageId)
				unknown++
			}
			dead[env.ID]++
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out2, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries})
		if err != nil {
			return unknown, fmt.Errorf("chaos: delete from dead-letter queue %s: %w", queue, err)
		}
		if len(out2.Failed) > 0 {
			return unknown, fmt.Errorf("chaos: delete from dead-letter queue %s: %s", queue, aws.ToString(out2.Failed[0].Message))
		}
	}
}
