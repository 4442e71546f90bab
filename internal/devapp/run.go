package devapp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
)

// Synth modes of Config.Synth.
const (
	SynthAuto   = "auto"   // when cdk.out is missing or older than the app's sources (SynthReason)
	SynthAlways = "always" // every run
	SynthNever  = "never"  // use cdk.out as it is
)

// Config configures Run.
type Config struct {
	// AWS is the emulator's configuration (BaseEndpoint set). Required.
	AWS aws.Config
	// Root is the repository root: cdk.out, infra/synth.sh and the functions' sources. Required.
	Root string
	// Synth is SynthAuto (default), SynthAlways or SynthNever.
	Synth string
	// Prefix goes before every stack name, so that runs can share an emulator; default none.
	Prefix string
	// Workload is what to enqueue; the zero Workload enqueues nothing (the schedules still fire).
	Workload Workload
	// Once ends the run when every job has succeeded or been dead-lettered (drained), or after
	// Timeout. Otherwise the run goes on until ctx ends.
	Once bool
	// Timeout bounds a Once run's wait for the workload to drain; default 5 minutes.
	Timeout time.Duration
	// DrainGrace is how long a run ended by ctx waits for the jobs in flight; default 20 s.
	DrainGrace time.Duration
	// Interval is how often the display is updated; default 1 s.
	Interval time.Duration
	// Display shows the progress; nil shows nothing.
	Display Display
	// FunctionOutput receives the functions' output, the stack's own log and the AWS SDK's
	// warnings; nil discards.
	FunctionOutput io.Writer
	// Keep leaves the deployment on the emulator; by default Run destroys it before returning.
	Keep bool
	// StateDemo adds fan-out batches and unique jobs to the workload (the zero value: none).
	StateDemo StateDemo
	// OutboxDemo adds accounts opened with their welcome email in the transactional outbox (the
	// zero value: none).
	OutboxDemo OutboxDemo
	// BuildDir receives the functions' bootstraps; default <Root>/.run/functions.
	BuildDir string
}

// Result is what a run did.
type Result struct {
	Summary
	// Census is the final count (Full).
	Census *Census
	// Drained is set when every tracked job succeeded or was dead-lettered.
	Drained bool
	// Synthesized is set when the run synthesized cdk.out.
	Synthesized bool
	// Deployment is what was deployed (destroyed again unless Config.Keep).
	Deployment *deploy.Deployment
	// Tracker holds the tracked jobs and their effects.
	Tracker *Tracker
	// LeftBehind are the function processes still alive after the stack stopped (none expected).
	LeftBehind []int
	// Elapsed is the time from the start of the stack to its stop.
	Elapsed time.Duration
	// State is what the job state demo did (Config.StateDemo).
	State *StateResult
	// Outbox is what the outbox demo did (Config.OutboxDemo).
	Outbox *OutboxResult
	// LargeJobs are the ids of the workload's jobs over 1 MiB, sent as claim checks.
	LargeJobs []string
}

// NotDrainedError reports a Once run whose workload did not drain within the timeout.
type NotDrainedError struct {
	Timeout     time.Duration
	Unaccounted int
	Pending     int
}

func (e *NotDrainedError) Error() string {
	return fmt.Sprintf("demo: the workload did not drain within %s: %d jobs neither succeeded nor dead-lettered, %d messages still in the queues",
		e.Timeout, e.Unaccounted, e.Pending)
}

// maxCensusFailures is how many counts in a row may fail before a run gives up.
const maxCensusFailures = 10

// idleLimit is how long a Once run waits with empty queues and nothing running before it stops
// waiting for jobs that cannot be found (they are lost).
const idleLimit = 15 * time.Second

// Run runs the sample stack offline from start to end: it synthesizes cdk.out when needed,
// deploys it onto the emulator and starts every function and event source mapping and the
// schedules (devstack.Up, the sample functions built instrumented: instrument.Binaries), enqueues
// the workload, shows the progress, and at the end stops everything it started, counts what
// became of every job (Census) and destroys the deployment. The emulator itself is the caller's
// (see localstack/emulator).
//
// The returned Result is non-nil whenever the stack started, also with an error (a
// *NotDrainedError when a Once run timed out).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Root == "" {
		return nil, errors.New("demo: Config.Root is required")
	}
	cfg = cfg.withDefaults()
	workload, err := cfg.Workload.Jobs()
	if err != nil {
		return nil, err
	}
	// Cleanup runs even after ctx ends.
	bg := context.WithoutCancel(ctx)
	res := &Result{}
	if res.Synthesized, err = synthAsAsked(ctx, cfg); err != nil {
		return nil, err
	}
	running, err := startStack(ctx, &cfg, res)
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer func() {
			if derr := running.Deployment.Destroy(bg); derr != nil {
				cfg.note("destroy: %v", derr)
			}
		}()
	}
	started := time.Now()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopStack(running.Stack, started, res, cfg.note)
		}
	}
	defer stop()
	cfg.note("started %s", strings.Join(running.Stack.Functions(), ", "))
	if cs := running.Stack.Containers(); len(cs) > 0 {
		cfg.note("started containers %s (local processes, restarted if they exit)", strings.Join(cs, ", "))
	}

	if err := enqueueWorkload(ctx, cfg, res, workload); err != nil {
		return res, err
	}
	if res.State, err = runStateDemo(ctx, cfg, res.Tracker, res.Deployment); err != nil {
		return res, err
	}
	if res.Outbox, err = runOutboxDemo(ctx, cfg, res.Tracker, res.Deployment); err != nil {
		return res, err
	}
	runErr := watchUntilDone(ctx, cfg, res.Tracker, started, res)
	stop()
	if err := finalCount(bg, cfg, res); err != nil {
		return res, errors.Join(runErr, err)
	}
	res.Outbox.readStreams(running.Stack)
	if err := res.Outbox.countLeft(bg, cfg, res.Deployment); err != nil {
		return res, errors.Join(runErr, err)
	}
	if o := res.Outbox; o != nil && len(o.JobIDs) > 0 {
		cfg.note("outbox forwarder: %d invocations; %d other writes to the state table filtered out by its event source mapping", o.Invocations, o.Filtered)
	}
	res.State.countCallbacks(res.Tracker)
	noteLarge(bg, cfg, res)
	if len(res.LeftBehind) > 0 {
		runErr = errors.Join(runErr, fmt.Errorf("demo: function processes left behind: %v", res.LeftBehind))
	}
	return res, runErr
}

// withDefaults fills in cfg's defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.DrainGrace <= 0 {
		cfg.DrainGrace = 20 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.FunctionOutput == nil {
		cfg.FunctionOutput = io.Discard
	}
	return cfg
}

// note shows a line on the display, if any.
func (cfg Config) note(format string, args ...any) {
	if cfg.Display != nil {
		cfg.Display.Note(fmt.Sprintf(format, args...))
	}
}

// synthAsAsked synthesizes cdk.out as cfg.Synth says, and reports whether it did.
func synthAsAsked(ctx context.Context, cfg Config) (bool, error) {
	switch cfg.Synth {
	case "", SynthAuto:
		return EnsureSynth(ctx, cfg.Root, noteWriter{cfg.note})
	case SynthAlways:
		cfg.note("synth: synthesizing the CDK app")
		if err := Synth(ctx, cfg.Root, noteWriter{cfg.note}); err != nil {
			return false, err
		}
		return true, nil
	case SynthNever:
		return false, nil
	}
	return false, fmt.Errorf("demo: Config.Synth must be %q, %q or %q, not %q", SynthAuto, SynthAlways, SynthNever, cfg.Synth)
}

// startStack deploys cdk.out with the sample functions built instrumented, and starts it with a
// Tracker (res.Tracker) following every batch, tick and output line. It sets res.Deployment.
func startStack(ctx context.Context, cfg *Config, res *Result) (*devstack.Running, error) {
	log := slog.New(slog.NewJSONHandler(cfg.FunctionOutput, nil))
	// The SDK's own warnings (a long poll cut short at stop) go with the functions' output.
	cfg.AWS.Logger = logging.NewStandardLogger(cfg.FunctionOutput)
	start := time.Now()
	running, err := devstack.Up(ctx, devstack.UpConfig{
		Deploy: deploy.Options{
			CDKOut: filepath.Join(cfg.Root, "cdk.out"), ModuleDir: cfg.Root, Prefix: cfg.Prefix, Logger: log,
			BuildDir: cfg.BuildDir, Sources: instrument.Binaries,
		},
		Config:      devstack.Config{AWS: cfg.AWS, Logger: log, Events: true, Metrics: true},
		KeepOnError: cfg.Keep,
		Prepare: func(_ context.Context, d *deploy.Deployment, sc *devstack.Config) error {
			cfg.note("deployed %d stacks in %s: %d functions, %d queues, %d tables, %d schedules (%d resources not needed offline)",
				len(d.Stacks), time.Since(start).Round(100*time.Millisecond), len(d.Functions), len(d.Queues), len(d.Tables),
				len(d.Schedules), len(d.Skipped))
			if err := d.Whole(); err != nil {
				return err
			}
			tr, err := NewTracker(cfg.AWS, d)
			if err != nil {
				return err
			}
			res.Deployment, res.Tracker = d, tr
			sc.Output, sc.OnBatch, sc.OnFire = tr.Output(cfg.FunctionOutput), tr.OnBatch, tr.OnFire
			return nil
		},
	})
	if err != nil {
		var exists *deploy.StackExistsError
		if errors.As(err, &exists) {
			return nil, fmt.Errorf("%w (a run with --keep, or one that crashed, left it: restart the emulator, or pass a --prefix)", err)
		}
		return nil, err
	}
	res.Tracker.Attach(running.Stack)
	return running, nil
}

// stopStack stops the stack and records the run's elapsed time and the function processes that
// outlived the stop.
func stopStack(stack *devstack.Stack, started time.Time, res *Result, note func(string, ...any)) {
	pids := stack.PIDs()
	if err := stack.Stop(); err != nil {
		note("stop: %v", err)
	}
	res.Elapsed = time.Since(started)
	for _, pid := range pids {
		if alive(pid) {
			res.LeftBehind = append(res.LeftBehind, pid)
		}
	}
}

// enqueueWorkload enqueues the workload (with its faults) and tracks each job enqueued. Jobs
// over 1 MiB go to the deployment's payload bucket (a claim check).
func enqueueWorkload(ctx context.Context, cfg Config, res *Result, workload []Job) error {
	if len(workload) == 0 {
		return nil
	}
	tr := res.Tracker
	opts := jobs.ClientOptions{Queues: tr.Routes(), Lanes: tr.Lanes()}
	if bucket := payloadBucket(res.Deployment); bucket != "" {
		opts.Payloads = &jobs.Payloads{S3: jobs.NewPayloadS3Client(cfg.AWS), Bucket: bucket, KeyPrefix: largeJobPrefix}
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg.AWS), opts)
	if err != nil {
		return err
	}
	batch := make([]jobs.BatchJob, len(workload))
	for i, j := range workload {
		batch[i] = jobs.BatchJob{Args: j.Enqueued(), Opts: &jobs.EnqueueOpts{GroupID: j.GroupID, Priority: j.Priority}}
	}
	results, err := client.EnqueueBatch(ctx, batch)
	for i, r := range results {
		tr.Add(r, batch[i].Args, "", workload[i].GroupID)
	}
	if err != nil {
		return fmt.Errorf("demo: enqueue the workload: %w", err)
	}
	cfg.note("enqueued %d jobs", len(workload))
	for i, j := range workload {
		if j.IsLarge() && results[i].Err == nil {
			res.LargeJobs = append(res.LargeJobs, results[i].ID)
			cfg.note("enqueued large job %s (%s, %.1f MiB): stored in S3 bucket %s, its message carries the pointer",
				results[i].ID, j.Args.Kind(), float64(j.BodyBytes())/(1<<20), opts.Payloads.Bucket)
		}
	}
	return nil
}

// payloadBucket returns the name of the deployment's payload bucket (the PayloadBucket
// construct's output), or "".
func payloadBucket(d *deploy.Deployment) string {
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			if strings.HasPrefix(k, contract.OutputPayloadBucketPrefix) {
				return v
			}
		}
	}
	return ""
}

// noteLarge shows what became of the workload's large jobs, and what is left of them in the
// payload bucket (a job's object is deleted once it succeeded).
func noteLarge(ctx context.Context, cfg Config, res *Result) {
	if len(res.LargeJobs) == 0 {
		return
	}
	for _, id := range res.LargeJobs {
		outcome := "did not succeed"
		if res.Census != nil && res.Census.Succeeded[id] {
			outcome = "ran: its worker read it from S3"
		}
		cfg.note("large job %s %s", id, outcome)
	}
	bucket := payloadBucket(res.Deployment)
	if bucket == "" {
		return
	}
	out, err := jobs.NewPayloadS3Client(cfg.AWS).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(largeJobPrefix)})
	if err != nil {
		cfg.note("payload bucket %s: %v", bucket, err)
		return
	}
	cfg.note("payload bucket %s: %d object(s) left under %s", bucket, aws.ToInt32(out.KeyCount), largeJobPrefix)
}

// largeJobPrefix begins the keys of the workload's large jobs in the payload bucket.
const largeJobPrefix = "jobs/"

// watchUntilDone watches the run (watch) and, when ctx ends first, waits up to DrainGrace for
// the jobs in flight.
func watchUntilDone(ctx context.Context, cfg Config, tr *Tracker, started time.Time, res *Result) error {
	runErr := watch(ctx, cfg, tr, started, res)
	if ctx.Err() == nil {
		return runErr
	}
	cfg.note("interrupted: waiting up to %s for the jobs in flight", cfg.DrainGrace)
	dcfg := cfg
	dcfg.Once, dcfg.Timeout = true, cfg.DrainGrace
	if err := watch(context.WithoutCancel(ctx), dcfg, tr, started, res); err != nil {
		var nd *NotDrainedError
		if !errors.As(err, &nd) {
			runErr = err
		}
	}
	return runErr
}

// finalCount takes the full census of the stopped run into res (retrying a failed count: the
// emulator may fail a call now and then, and the count matters most) and shows it.
func finalCount(ctx context.Context, cfg Config, res *Result) error {
	var (
		final *Census
		err   error
	)
	for try := 1; ; try++ {
		if final, err = res.Tracker.Census(ctx, true); err == nil || try == 3 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return err
	}
	res.Census, res.Drained, res.Summary = final, final.Drained(), SummaryOf(final)
	if cfg.Display != nil {
		cfg.Display.Update(final, res.Elapsed)
	}
	return nil
}

// watch updates the display every Interval until ctx ends, or, with Once, until the workload
// drains (nil), stays idle with jobs missing (nil: they are lost), or Timeout passes.
func watch(ctx context.Context, cfg Config, tr *Tracker, started time.Time, res *Result) error {
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	deadline := time.Now().Add(cfg.Timeout)
	var idleSince time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c, err := tr.Census(ctx, false)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A call the emulator failed: count again at the next tick, up to a point.
			if failures++; failures == maxCensusFailures {
				return err
			}
			continue
		}
		failures = 0
		if cfg.Display != nil {
			cfg.Display.Update(c, time.Since(started))
		}
		if !cfg.Once {
			continue
		}
		quiet := c.Total.Pending == 0 && c.Total.Running == 0
		switch {
		case !quiet:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		}
		if quiet && (c.Unaccounted == 0 || time.Since(idleSince) >= idleLimit) {
			full, err := tr.Census(ctx, true)
			if err != nil {
				if failures++; failures == maxCensusFailures {
					return err
				}
				continue
			}
			if full.Drained() || time.Since(idleSince) >= idleLimit {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return &NotDrainedError{Timeout: cfg.Timeout, Unaccounted: c.Unaccounted, Pending: c.Total.Pending}
		}
	}
}

// DeadReasons returns how many of the census's dead jobs have each reason, as "reason=n" in
// reason order ("" is shown as "redrive_policy": moved by the queue's RedrivePolicy).
func DeadReasons(c *Census) []string {
	n := map[string]int{}
	for _, j := range c.DeadJobs {
		r := j.Reason
		r = cmp.Or(r, "redrive_policy")
		n[r]++
	}
	var out []string
	for r, k := range n {
		out = append(out, fmt.Sprintf("%s=%d", r, k))
	}
	sort.Strings(out)
	return out
}

// noteWriter turns written lines into Display notes.
type noteWriter struct{ note func(string, ...any) }

func (w noteWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.note("%s", line)
		}
	}
	return len(p), nil
}
