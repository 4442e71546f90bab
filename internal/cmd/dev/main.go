// Command dev runs jobkit's sample stack offline with a demo workload: what `make dev` and
// `jobkit dev` run. It lives apart from the ops CLI so that the CLI links no emulator code.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/jobkit-go/jobkit/internal/devapp"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/localstack/emulator"
	"github.com/jobkit-go/jobkit/offline/devrun"
)

// defaultDevEndpoint is where `jobkit dev` finds or starts the emulator without --endpoint.
const defaultDevEndpoint = "http://127.0.0.1:4566"

// devOptions are the flags of `jobkit dev`.
type devOptions struct {
	once     bool
	timeout  time.Duration
	synth    string
	prefix   string
	keep     bool
	progress string
	logs     string
	root     string
	noDemo   bool
	console  string
}

func newDevCmd(a *app) *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the sample stack offline with a demo workload (what `make dev` runs)",
		Long: `dev runs jobkit's sample stack on this machine, with no AWS account and no Docker:

  1. synthesizes the CDK app into cdk.out when it is missing or older than its sources;
  2. finds the emulator at --endpoint (default $AWS_ENDPOINT_URL, else ` + defaultDevEndpoint + `),
     or starts moto there with localstack/emulator.sh;
  3. deploys cdk.out onto it: queues, tables and schedules as the templates define them;
  4. runs each function's real binary behind a local Lambda Runtime API, fed by the SQS and
     DynamoDB Streams event source mappings of the templates, and fires the schedules;
  5. enqueues a demo workload on the sample functions (about 100 emails, rate limited, and a
     3 MiB one sent through S3, 60 ledger postings over 6 accounts, 8 transcodes, and 30
     notifications over the Notify queue's lanes, some sent at critical, some at bulk), some
     failing a few attempts, some exhausting their attempts, some poison; and opens 5 accounts,
     each with its welcome email written in the same transaction to the outbox, which the
     outbox forwarder sends;
  6. shows per queue: enqueued / running / succeeded / retried / dead — a table redrawn in
     place on a terminal, a line every few seconds otherwise.
  7. serves the ops console (jobkit console) on --console, default http://` + devrun.DefaultConsoleAddr + `/,
     while the stack runs, and says where.

With --once it ends when every job has succeeded or been dead-lettered (or after --timeout);
without it, it runs until Ctrl-C (the schedules keep firing; enqueue more with 'jobkit
enqueue'). Either way it then stops what it started — functions, pollers, the deployment, and
the emulator if it started it — and prints

  DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>
  DEV batches: opened=<n> callbacks=<n> duplicate_callbacks=<n>
  DEV unique: sent=<n> deduplicated=<n>
  DEV outbox: written=<n> forwarded=<n> left=<n>

counted from the stack's records (idempotency records, the functions' output, the dead-letter
queues, the state table's outbox items). lost counts jobs that are neither succeeded, nor in a
dead-letter queue, nor still on their queue, each named with its kind, queue and last known
state; it exits 1 when lost > 0, or when an outbox item was left unforwarded.`,
		Example: `  # What make dev runs
  jobkit dev

  # CI: run the workload to the end, then exit (make dev ONCE=1)
  jobkit dev --once

  # Keep the deployment on an emulator you started yourself, to look at it afterwards
  jobkit dev --once --keep --endpoint http://127.0.0.1:4566
  jobkit queues && jobkit dlq list --queue Email`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.once, "once", false, "end when the workload has drained (default when stderr is not a terminal, unless --no-workload)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "with --once, fail if the workload has not drained by then")
	f.StringVar(&o.synth, "synth", devapp.SynthAuto, "synthesize cdk.out: auto (when missing or stale), always or never")
	f.StringVar(&o.prefix, "prefix", "", "prefix of the stack names (to share an emulator with another deployment)")
	f.BoolVar(&o.keep, "keep", false, "leave the deployment on the emulator (and the emulator running if it was already)")
	f.StringVar(&o.progress, "progress", progressAuto, "progress display: auto, table, plain or none")
	f.StringVar(&o.logs, "function-logs", "", "file for the functions' output; default <repo>/.run/dev-functions.log, - for stderr")
	f.StringVar(&o.root, "root", "", "repository root (cdk.out, infra/); default: found from the working directory")
	f.BoolVar(&o.noDemo, "no-workload", false, "enqueue nothing: run the stack and its schedules only")
	f.StringVar(&o.console, "console", devrun.DefaultConsoleAddr, `serve the ops console (jobkit console) there while the stack runs; "off" for none`)
	return cmd
}

func runDev(ctx context.Context, a *app, o *devOptions, stdout, stderr io.Writer) error {
	root, err := repoRoot(o.root)
	if err != nil {
		return err
	}
	tty := isTerminal(stderr)
	display, err := newDisplay(o.progress, tty, stderr)
	if err != nil {
		return err
	}
	note := func(format string, args ...any) {
		if display != nil {
			display.Note(fmt.Sprintf(format, args...))
		} else {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	once := o.once
	if !once && !tty && !o.noDemo {
		// Without a workload there is nothing to drain: the stack then runs until a signal.
		once = true
		note("dev: stderr is not a terminal: ending when the workload has drained (as --once)")
	}
	logs, closeLogs, err := openLogs(o.logs, root, stderr, note)
	if err != nil {
		return err
	}
	defer closeLogs()

	a.endpoint = cmp.Or(a.endpoint, defaultDevEndpoint)
	emu, err := emulator.Start(ctx, root, a.endpoint)
	if err != nil {
		return err
	}
	if emu.Started {
		note("dev: started the emulator at %s", a.endpoint)
	} else {
		note("dev: using the emulator at %s", a.endpoint)
	}
	defer func() {
		if err := emu.Stop(); err != nil {
			note("dev: %v", err)
		} else if emu.Started {
			note("dev: stopped the emulator")
		}
	}()
	awsCfg, err := emulator.Config(ctx, a.endpoint, a.region)
	if err != nil {
		return err
	}
	stopConsole := devrun.ServeConsole(ctx, o.console, awsCfg, o.prefix+contract.DefaultStack, func(s string) { note("%s", s) })
	defer stopConsole()
	workload, stateDemo, outboxDemo := devapp.DevWorkload(), devapp.DevStateDemo(), devapp.DevOutboxDemo()
	if o.noDemo {
		workload, stateDemo, outboxDemo = devapp.Workload{}, devapp.StateDemo{}, devapp.OutboxDemo{}
	}
	if o.keep && emu.Started {
		note("dev: --keep: the deployment goes with the emulator this run started and stops")
	}
	start := time.Now()
	res, runErr := devapp.Run(ctx, devapp.Config{
		AWS: awsCfg, Root: root, Synth: o.synth, Prefix: o.prefix, Workload: workload,
		Once: once, Timeout: o.timeout, Display: display, FunctionOutput: logs, Keep: o.keep, StateDemo: stateDemo,
		OutboxDemo: outboxDemo,
	})
	if res == nil || res.Census == nil {
		return runErr
	}
	report(res, display == nil || !tty || o.progress == progressPlain, time.Since(start), stdout, stderr, note)
	if runErr != nil {
		return runErr
	}
	if err := res.Census.LostError(); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	if st := res.State; st != nil && (st.DuplicateCallbacks > 0 || st.Callbacks < st.Opened) {
		return fmt.Errorf("dev: batch callbacks: %d of %d batches called back, %d duplicate runs", st.Callbacks, st.Opened, st.DuplicateCallbacks)
	}
	if ob := res.Outbox; ob != nil && ob.Left > 0 {
		return fmt.Errorf("dev: %d of %d outbox jobs were never forwarded", ob.Left, len(ob.JobIDs))
	}
	return nil
}

// repoRoot returns root, or when it is empty the repository the working directory is in.
func repoRoot(root string) (string, error) {
	if root != "" {
		return root, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if root, err = devapp.ModuleRoot(wd); err != nil {
		return "", fmt.Errorf("%w (run it inside the jobkit repository, or pass --root)", err)
	}
	return root, nil
}

// newDisplay returns the display --progress asks for (nil for none) on stderr.
func newDisplay(progress string, tty bool, stderr io.Writer) (devapp.Display, error) {
	switch progress {
	case progressAuto, "":
		if tty {
			return devapp.NewTableDisplay(stderr, "jobkit dev"), nil
		}
		return devapp.NewLineDisplay(stderr, 3*time.Second), nil
	case "table", progressBar:
		return devapp.NewTableDisplay(stderr, "jobkit dev"), nil
	case progressPlain:
		return devapp.NewLineDisplay(stderr, 3*time.Second), nil
	case progressNone:
		return nil, nil
	}
	return nil, usageError{fmt.Errorf("--progress must be auto, table, plain or none, not %q", progress)}
}

// openLogs opens where the functions' output goes: stderr for "-", else the file logPath
// (default <root>/.run/dev-functions.log). closeLogs closes it.
func openLogs(logPath, root string, stderr io.Writer, note func(string, ...any)) (w io.Writer, closeLogs func(), err error) {
	if logPath == "-" {
		return stderr, func() {}, nil
	}
	if logPath == "" {
		logPath = filepath.Join(root, ".run", "dev-functions.log")
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	note("dev: the functions' output goes to %s", logPath)
	return f, func() { _ = f.Close() }, nil
}

// report prints the end of a run: the final table (when the display did not show it), notes on
// dead-lettered, unlisted and pending jobs and the run's duration, and the DEV summary line on
// stdout.
func report(res *devapp.Result, table bool, total time.Duration, stdout, stderr io.Writer, note func(string, ...any)) {
	c := res.Census
	if table {
		fmt.Fprint(stderr, devapp.FormatTable(c))
	}
	if reasons := devapp.DeadReasons(c); len(reasons) > 0 {
		// Reasons come from the dead-letter queues' messages: untrusted, escaped for the terminal.
		for i, r := range reasons {
			reasons[i] = inspect.Printable(r, 80)
		}
		note("dev: dead-lettered by reason: %s (jobkit dlq list --queue <name> shows them while the stack runs)", strings.Join(reasons, " "))
	}
	if c.Unlisted > 0 {
		note("dev: %d dead-letter messages could not be listed (FIFO heads only); counted as dead", c.Unlisted)
	}
	if !res.Drained && c.Total.Pending > 0 {
		note("dev: %d messages were still queued at the end (not counted as lost)", c.Total.Pending)
		for _, line := range c.LeftLines() {
			note("dev: still on its queue: %s", line)
		}
	}
	for _, line := range c.LostLines() {
		note("dev: lost: %s", line)
	}
	if len(res.LeftBehind) == 0 {
		note("dev: the stack ran %s (%s in all); no function process left behind", res.Elapsed.Round(100*time.Millisecond),
			total.Round(100*time.Millisecond))
	}
	fmt.Fprintln(stdout, res.Summary.String())
	if s := res.State; s != nil && (s.Opened > 0 || s.UniqueSent > 0) {
		fmt.Fprintln(stdout, s.BatchLine())
		fmt.Fprintln(stdout, s.UniqueLine())
	}
	if o := res.Outbox; o != nil && len(o.JobIDs) > 0 {
		fmt.Fprintln(stdout, o.Line())
	}
}

// Progress modes of --progress.
const (
	progressAuto  = "auto"
	progressBar   = "bar"
	progressPlain = "plain"
	progressNone  = "none"
)

// Exit codes, as the jobkit CLI's.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks a wrong command line (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// app holds the flags dev shares with the jobkit CLI.
type app struct {
	endpoint string
	region   string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs dev with args and returns the exit code. Tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{}
	cmd := newDevCmd(a)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.Flags().StringVar(&a.endpoint, "endpoint", os.Getenv("AWS_ENDPOINT_URL"), "emulator endpoint URL; default $AWS_ENDPOINT_URL, else "+defaultDevEndpoint)
	cmd.Flags().StringVar(&a.region, "region", "", "AWS region; default $AWS_REGION, else us-east-1")
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "jobkit dev: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "Run 'jobkit dev --help' for usage.")
		return exitUsage
	}
	return exitError
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("dev takes no arguments, got %q", args)}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
