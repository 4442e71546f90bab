package devapp

import (
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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/localstack/deploy"
	"github.com/jobkit-go/jobkit/localstack/devstack"
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
// deploys it onto the emulator, starts every function and event source mapping and the schedules
// (devstack), enqueues the workload, shows the progress, and at the end stops everything it
// started, counts what became of every job (Census) and destroys the deployment. The emulator
// itself is the caller's (see localstack/emulator).
//
// The returned Result is non-nil whenever the stack started, also with an error (a
// *NotDrainedError when a Once run timed out).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Root == "" {
		return nil, errors.New("demo: Config.Root is required")
	}
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
	note := func(format string, args ...any) {
		if cfg.Display != nil {
			cfg.Display.Note(fmt.Sprintf(format, args...))
		}
	}
	workload, err := cfg.Workload.Jobs()
	if err != nil {
		return nil, err
	}
	// Cleanup runs even after ctx ends.
	bg := context.WithoutCancel(ctx)
	res := &Result{}

	switch cfg.Synth {
	case "", SynthAuto:
		did, err := EnsureSynth(ctx, cfg.Root, noteWriter{note})
		if err != nil {
			return nil, err
		}
		res.Synthesized = did
	case SynthAlways:
		note("synth: synthesizing the CDK app")
		if err := Synth(ctx, cfg.Root, noteWriter{note}); err != nil {
			return nil, err
		}
		res.Synthesized = true
	case SynthNever:
	default:
		return nil, fmt.Errorf("demo: Config.Synth must be %q, %q or %q, not %q", SynthAuto, SynthAlways, SynthNever, cfg.Synth)
	}

	log := slog.New(slog.NewJSONHandler(cfg.FunctionOutput, nil))
	// The SDK's own warnings (a long poll cut short at stop) go with the functions' output.
	cfg.AWS.Logger = logging.NewStandardLogger(cfg.FunctionOutput)
	start := time.Now()
	d, err := deploy.Deploy(ctx, deploy.NewClients(cfg.AWS), &deploy.Options{
		CDKOut: filepath.Join(cfg.Root, "cdk.out"), ModuleDir: cfg.Root, Prefix: cfg.Prefix, Logger: log,
		BuildDir: cfg.BuildDir,
	})
	if d != nil {
		res.Deployment = d
		if !cfg.Keep {
			defer func() {
				if derr := d.Destroy(bg); derr != nil {
					note("destroy: %v", derr)
				}
			}()
		}
	}
	if err != nil {
		var exists *deploy.StackExistsError
		if errors.As(err, &exists) {
			return nil, fmt.Errorf("%w (a run with --keep, or one that crashed, left it: restart the emulator, or pass a --prefix)", err)
		}
		return nil, err
	}
	note("deployed %d stacks in %s: %d functions, %d queues, %d tables, %d schedules (%d resources not needed offline)",
		len(d.Stacks), time.Since(start).Round(100*time.Millisecond), len(d.Functions), len(d.Queues), len(d.Tables),
		len(d.Schedules), len(d.Skipped))

	tr, err := NewTracker(cfg.AWS, d)
	if err != nil {
		return nil, err
	}
	res.Tracker = tr
	stack, err := devstack.Start(ctx, devstack.Config{
		AWS: cfg.AWS, Deployment: d, Output: tr.Output(cfg.FunctionOutput), Logger: log,
		OnBatch: tr.OnBatch, OnFire: tr.OnFire,
	})
	if err != nil {
		return nil, err
	}
	started := time.Now()
	tr.Attach(stack)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
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
	defer stop()
	note("started %s", strings.Join(stack.Functions(), ", "))

	if len(workload) > 0 {
		client, err := jobs.NewClient(sqs.NewFromConfig(cfg.AWS), jobs.ClientOptions{Queues: tr.Routes()})
		if err != nil {
			return res, err
		}
		batch := make([]jobs.BatchJob, len(workload))
		for i, j := range workload {
			batch[i] = jobs.BatchJob{Args: j.Args, Opts: &jobs.EnqueueOpts{GroupID: j.GroupID}}
		}
		results, err := client.EnqueueBatch(ctx, batch)
		for i, r := range results {
			tr.Add(r, workload[i].Args, "", workload[i].GroupID)
		}
		if err != nil {
			return res, fmt.Errorf("demo: enqueue the workload: %w", err)
		}
		note("enqueued %d jobs", len(workload))
	}

	runErr := watch(ctx, cfg, tr, started, res)
	if ctx.Err() != nil {
		note("interrupted: waiting up to %s for the jobs in flight", cfg.DrainGrace)
		dcfg := cfg
		dcfg.Once, dcfg.Timeout = true, cfg.DrainGrace
		if err := watch(bg, dcfg, tr, started, res); err != nil {
			var nd *NotDrainedError
			if !errors.As(err, &nd) {
				runErr = err
			}
		}
	}
	stop()
	var final *Census
	for try := 1; ; try++ { // the emulator may fail a call now and then: the count matters most
		if final, err = tr.Census(bg, true); err == nil || try == 3 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		return res, errors.Join(runErr, err)
	}
	res.Census, res.Drained, res.Summary = final, final.Drained(), SummaryOf(final)
	if cfg.Display != nil {
		cfg.Display.Update(final, res.Elapsed)
	}
	if len(res.LeftBehind) > 0 {
		runErr = errors.Join(runErr, fmt.Errorf("demo: function processes left behind: %v", res.LeftBehind))
	}
	return res, runErr
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
		if r == "" {
			r = "redrive_policy"
		}
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
