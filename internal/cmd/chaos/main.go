// Command chaos runs jobkit's sample stack offline under faults (package chaos), redrives its
// dead-letter queues once the jobs have settled (-no-redrive: not), and prints
//
//	CHAOS jobs=<n> lost=<n> stranded=<n> redriven=<n> redrive_lost=<n> duplicate_effects=<n> dead=<n> expected_dead=<n> order_violations=<n> long_job_runs=<n> never_ran_dead=<n> duplicate_deliveries=<n> deadline_batches=<n> seconds=<n> batches=<n> callbacks=<n> duplicate_callbacks=<n> missing_callbacks=<n>
//
// It exits 1 unless lost=0, stranded=0, redrive_lost=0, duplicate_effects=0,
// dead=expected_dead, order_violations=0, long_job_runs=1 and never_ran_dead=0, with
// duplicate_deliveries and deadline_batches above 0 when duplicates and overruns were planned,
// naming the lost, stranded and redrive-lost jobs; and 2 when the run itself failed. It needs the
// emulator at AWS_ENDPOINT_URL (default http://127.0.0.1:4566) and a synthesized cloud assembly
// (make synth).
//
// -jobs sizes the run (default 10,000); below 10,000, the FIFO groups and the short transcodes
// not set by their own flags shrink with it (a group of 20 postings per 100 jobs, 40 transcodes
// per 10,000 jobs, at least 4), so `-jobs 300` is a small run of the same shape.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jobkit-go/jobkit/internal/chaos"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func main() {
	var cfg chaos.Config
	flag.StringVar(&cfg.CDKOut, "cdk-out", "cdk.out", "the synthesized cloud assembly")
	flag.StringVar(&cfg.BuildDir, "build-dir", filepath.Join(".run", "chaos", "functions"), "where the function binaries are built")
	flag.IntVar(&cfg.Plan.Jobs, "jobs", 10000, "jobs in all (FIFO part and the long job included)")
	flag.IntVar(&cfg.Plan.Groups, "groups", 100, "FIFO message groups (ledger accounts)")
	flag.IntVar(&cfg.Plan.GroupJobs, "group-jobs", 22, "jobs per FIFO group")
	flag.IntVar(&cfg.Plan.FailingHeads, "failing-heads", 5, "FIFO groups whose first two jobs fail every attempt, 20 jobs waiting behind them")
	flag.IntVar(&cfg.Plan.CrashLoops, "crash-loops", 3, "email jobs that kill the email function's process on every delivery")
	flag.Float64Var(&cfg.Plan.TransientRate, "transient", 0.10, "share of jobs that fail their first attempt(s)")
	flag.Float64Var(&cfg.Plan.PoisonRate, "poison", 0.01, "share of poison jobs")
	flag.Float64Var(&cfg.KillRate, "kill", chaos.DefaultKillRate, "share of email and ledger invocations whose process is killed mid-batch")
	flag.IntVar(&cfg.Plan.Transcodes, "transcodes", 40, "short transcodes, run in the transcode container once the long job is done")
	flag.Float64Var(&cfg.ContainerKillRate, "container-kill", chaos.DefaultContainerKillRate, "share of short transcode starts whose container process is killed mid-job")
	flag.Float64Var(&cfg.ThrottleRate, "throttle", chaos.DefaultThrottleRate, "share of AWS calls answered with a throttling error")
	flag.Float64Var(&cfg.Plan.OverrunRate, "overrun", 0.001, "share of jobs (first postings of ledger groups enqueued in a burst) whose first attempt returns past its deadline")
	flag.Float64Var(&cfg.Plan.DuplicateRate, "duplicate", 0.02, "share of jobs (emails) whose envelope is sent twice")
	flag.Float64Var(&cfg.LatencyRate, "latency", chaos.DefaultLatencyRate, "share of AWS calls held back before they are forwarded")
	flag.DurationVar(&cfg.MaxLatency, "max-latency", chaos.DefaultMaxLatency, "the longest a held-back AWS call waits")
	flag.DurationVar(&cfg.LedgerTimeout, "ledger-timeout", 0, "the ledger function's timeout during the run (0: the sample's)")
	flag.DurationVar(&cfg.LongJobVisibility, "long-vt", chaos.DefaultLongJobVisibility, "the transcode queue's visibility timeout; the long job runs 3× as long")
	flag.DurationVar(&cfg.Timeout, "timeout", chaos.DefaultTimeout, "how long the jobs may take to settle")
	flag.BoolVar(&cfg.NoRedrive, "no-redrive", false, "leave the dead-letter queues as the jobs left them (by default they are redriven once the jobs settle, and every redriven job must run again or be dead-lettered again)")
	flag.DurationVar(&cfg.RedriveTimeout, "redrive-timeout", chaos.DefaultRedriveTimeout, "how long the redriven jobs may take to settle")
	emailLimit := flag.Bool("email-rate-limit", false, "keep the email function's rate limit: its snoozes double the emulator's calls, past the run's time bound at 10,000 jobs")
	flag.StringVar(&cfg.FunctionLogLevel, "function-log-level", "", "the functions' log level (DEBUG logs every job)")
	var seed uint64
	flag.Uint64Var(&seed, "seed", 1, "seed of the plan and the faults")
	deadline := flag.Duration("deadline", 14*time.Minute, "bound on the whole run (deploy, jobs, checks)")
	logFile := flag.String("log", filepath.Join(".run", "chaos", "functions.log"), "file for the functions' output (\"\" discards it)")
	flag.Parse()
	scaleToJobs(&cfg.Plan)
	slowerEmulator(&cfg, deadline)
	cfg.NoEmailRateLimit = !*emailLimit
	cfg.Seed, cfg.Plan.Seed = seed, seed
	cfg.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The whole run, deploy and checks included, within -deadline: jobs still pending then count
	// as lost.
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	code := run(ctx, cfg, *logFile)
	cancel()
	stop()
	os.Exit(code)
}

// LocalStack in host mode serves a full run about half as fast as moto on the same machine (10,000
// jobs: enqueued in 9 minutes, not 5, and its FIFO backlog drains at under 1 job/s): its time
// bounds, unless the flags set them, are the moto defaults' double, plus the deploy.
const (
	localStackTimeout  = 25 * time.Minute
	localStackDeadline = 32 * time.Minute
)

// slowerEmulator gives a run on LocalStack its time bounds when -timeout and -deadline are not
// set: the same checks, more time.
func slowerEmulator(cfg *chaos.Config, deadline *time.Duration) {
	if os.Getenv("JOBKIT_EMULATOR") != "localstack" || cfg.Plan.Jobs < fullRun/2 {
		return
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["timeout"] {
		cfg.Timeout = localStackTimeout
	}
	if !set["deadline"] {
		*deadline = localStackDeadline
	}
}

// fullRun is the number of jobs the flags' defaults are sized for.
const fullRun = 10000

// scaleToJobs shrinks the FIFO groups and the short transcodes, when their flags are not set, to a
// -jobs below fullRun: one group per 100 jobs (at least one), 40 transcodes per fullRun jobs (at
// least 4, so that the container is still killed during one).
func scaleToJobs(p *chaos.PlanConfig) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if p.Jobs >= fullRun {
		return
	}
	if !set["groups"] {
		p.Groups = max(1, p.Jobs/100)
	}
	if !set["transcodes"] {
		p.Transcodes = max(4, 40*p.Jobs/fullRun)
	}
}

func run(ctx context.Context, cfg chaos.Config, logFile string) int {
	awsCfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	cfg.AWS = awsCfg
	var out io.Writer = io.Discard
	if logFile != "" {
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		f, err := os.Create(logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		defer f.Close()
		out = f
		fmt.Fprintf(os.Stderr, "chaos: functions' output in %s\n", logFile)
	}
	cfg.FunctionOutput = out
	cfg.Logger = slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Fprintf(os.Stderr, "chaos: %d jobs (%d FIFO groups × %d), transient %.0f%%, poison %.0f%%, overrun %.1f%%, sent twice %.0f%%, kills %.0f%% of invocations, %d short transcodes with the container killed in %.0f%% of their first starts, throttling %.0f%% and latency up to %s on %.0f%% of AWS calls, long job %s (3× its queue's visibility timeout), email rate limit %s\n",
		cfg.Plan.Jobs, cfg.Plan.Groups, cfg.Plan.GroupJobs, 100*cfg.Plan.TransientRate, 100*cfg.Plan.PoisonRate,
		100*cfg.Plan.OverrunRate, 100*cfg.Plan.DuplicateRate, 100*cfg.KillRate, cfg.Plan.Transcodes, 100*cfg.ContainerKillRate, 100*cfg.ThrottleRate,
		cfg.MaxLatency, 100*cfg.LatencyRate, 3*cfg.LongJobVisibility, map[bool]string{true: "off", false: "on"}[cfg.NoEmailRateLimit])
	t0 := time.Now()
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	for _, line := range rep.APILines() {
		fmt.Fprintln(os.Stderr, "chaos:", line)
	}
	fmt.Fprintln(os.Stderr, "chaos:", rep.FaultLine())
	fmt.Fprintf(os.Stderr, "chaos: wall time %.0fs (deploy, run, checks, cleanup)\n", time.Since(t0).Seconds())
	fmt.Println(rep.Line())
	if err := rep.Check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
