// Command jobkit-dev runs a service's own CDK app offline, with no AWS account and no Docker:
// what `jobkit dev` runs outside the jobkit repository. It synthesizes the app with its own
// cdk.json when asked (or when cdk.out is missing), deploys cdk.out onto the emulator, runs each
// function's real binary behind its SQS event source mappings, fires the schedules, prints the
// stacks' outputs as `export NAME='value'` lines (also written to --env-file) for a producer to
// source, and runs until SIGINT or SIGTERM (--once: until the job queues drain). At the end it
// prints a table per job queue and
//
//	DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n> cancelled=<n>
//
// counting every job on every queue it deployed, from the stack's own records, by job id (a job
// redriven and dead-lettered again is dead, not lost). Each lost job is named, with its kind, queue
// and last known state, and so are the jobs still on their queues when an interrupted run ends.
// It exits 1 when a job was lost.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/localstack/emulator"
	"github.com/jobkit-go/jobkit/offline/devrun"
)

// defaultEndpoint is the emulator's address without --endpoint or AWS_ENDPOINT_URL.
const defaultEndpoint = "http://127.0.0.1:4566"

// libraryModule is jobkit's module: a checkout of it (a replace directive) can start the emulator.
const libraryModule = "github.com/jobkit-go/jobkit"

type options struct {
	cdkOut, module, synth, cdk          string
	endpoint, region, prefix, logs, env string
	console                             string
	once, keep, reuse                   bool
	sources                             sourceFlag
	timeout                             time.Duration
}

func main() {
	// SIGHUP too: a closed terminal stops the stack and removes its deployment like Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := &options{}
	fs := flag.NewFlagSet("jobkit dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cdkOut, "cdk-out", "", "the cloud assembly; default cdk.json's \"output\" (else cdk.out) beside the nearest cdk.json")
	fs.StringVar(&o.module, "module", "", "the Go module of functions whose template does not name theirs; default the directory of cdk.json")
	fs.StringVar(&o.synth, "synth", "auto", "synthesize with the app's cdk.json: auto (when cdk.out is missing), always or never")
	fs.StringVar(&o.cdk, "cdk", "", "the CDK CLI for --synth; default $CDK, else cdk on PATH")
	fs.StringVar(&o.endpoint, "endpoint", os.Getenv("AWS_ENDPOINT_URL"), "emulator endpoint URL; default $AWS_ENDPOINT_URL, else "+defaultEndpoint)
	fs.StringVar(&o.region, "region", "", "AWS region; default $AWS_REGION, else us-east-1")
	fs.StringVar(&o.prefix, "prefix", "", "prefix of the stack names (to share an emulator with another deployment)")
	fs.StringVar(&o.logs, "function-logs", "", "file for the functions' output; default <module>/.run/dev-functions.log, - for stderr")
	fs.StringVar(&o.env, "env-file", "", "file for the export lines; default <module>/.run/dev.env")
	fs.BoolVar(&o.once, "once", false, "end when the job queues have drained (after a first job), instead of at SIGINT or SIGTERM")
	fs.DurationVar(&o.timeout, "timeout", 0, "end the run after this long (0: no limit)")
	fs.BoolVar(&o.keep, "keep", false, "leave the deployment on the emulator")
	fs.Var(&o.sources, "source", "ID=PACKAGE: build the Go function of logical id ID, whose template names no source, from PACKAGE (a folder of --module, or an import path); repeatable")
	fs.StringVar(&o.console, "console", devrun.DefaultConsoleAddr, `serve the ops console (jobkit console) there over the deployed stack's queues while it runs; "off" for none`)
	fs.BoolVar(&o.reuse, "reuse", false, "deploy onto an emulator already answering at the default endpoint, which this run did not start")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jobkit dev: no arguments expected, got %q\n", fs.Args())
		return 2
	}
	if err := dev(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "jobkit dev: %v\n", err)
		return 1
	}
	return 0
}

func dev(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	screen := &screen{w: stderr, tty: isTerminal(stderr)}
	note := screen.note
	appDir, cdkOut, err := locate(o)
	if err != nil {
		return err
	}
	if err := synth(ctx, o, appDir, cdkOut, stderr); err != nil {
		return err
	}
	module := cmp.Or(o.module, appDir)
	logs, closeLogs, err := openLogs(o.logs, module, stderr)
	if err != nil {
		return err
	}
	defer closeLogs()
	endpoint := cmp.Or(o.endpoint, defaultEndpoint)
	emu, err := startEmulator(ctx, module, endpoint)
	if err != nil {
		return err
	}
	said, err := whichEmulator(emulatorKind(endpoint), endpoint, emu.Started, o.endpoint != "", o.reuse)
	if err != nil {
		return err
	}
	note(said)
	defer func() {
		if err := emu.Stop(); err != nil {
			note("dev: " + err.Error())
		}
	}()
	cfg, err := emulator.Config(ctx, endpoint, o.region)
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	envFile := cmp.Or(o.env, filepath.Join(module, ".run", "dev.env"))
	stopConsole := func() {}
	defer func() { stopConsole() }()
	res, runErr := devrun.Run(ctx, devrun.Config{
		AWS: cfg, CDKOut: cdkOut, ModuleDir: module, Prefix: o.prefix, Once: o.once, Keep: o.keep, Sources: o.sources,
		FunctionOutput: logs, Note: note,
		Ready: func(exports []devrun.Export) {
			var b strings.Builder
			for _, e := range exports {
				b.WriteString(e.String() + "\n")
			}
			fmt.Fprint(stdout, b.String())
			for _, e := range exports {
				if e.Name == contract.EnvStack {
					stopConsole = devrun.ServeConsole(ctx, o.console, cfg, e.Value, note)
				}
			}
			if err := writeFile(envFile, b.String()); err != nil {
				note("dev: " + err.Error())
			} else {
				note("dev: the stack runs; producers: . " + envFile + " (Ctrl-C or SIGTERM stops it)")
			}
		},
		Progress: screen.progress,
	})
	if res == nil || res.Census == nil {
		return runErr
	}
	screen.final(res.Census)
	fmt.Fprintf(stderr, "dev: the stack ran %s; the functions' output is in %s\n", res.Elapsed.Round(100*time.Millisecond), o.logsShown(module))
	for _, line := range res.Census.LeftLines() {
		note("dev: still on its queue at the end (not lost): " + line)
	}
	for _, line := range res.Census.LostLines() {
		note("dev: lost: " + line)
	}
	fmt.Fprintln(stdout, res.Census.Summary())
	if runErr != nil {
		return runErr
	}
	return res.Census.LostError()
}

// screen shows the run on stderr: on a terminal, the table redrawn in place under the notes;
// otherwise a line per update.
type screen struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	shown int // lines of the table drawn last, 0 after a note
}

func (s *screen) note(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(s.w, line)
	s.shown = 0
}

func (s *screen) progress(c *devrun.Census) {
	if !s.tty {
		s.note(c.Line())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown > 0 {
		fmt.Fprintf(s.w, "\x1b[%dA\x1b[J", s.shown) // up over the last table, clear to the end
	}
	table := c.Table()
	fmt.Fprint(s.w, table)
	s.shown = strings.Count(table, "\n")
}

// final shows the last count: the table, in place of the live one on a terminal.
func (s *screen) final(c *devrun.Census) {
	if s.tty {
		s.progress(c)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprint(s.w, c.Table())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (o *options) logsShown(module string) string {
	if o.logs == "-" {
		return "stderr"
	}
	return cmp.Or(o.logs, filepath.Join(module, ".run", "dev-functions.log"))
}

// locate returns the app's directory (that of the nearest cdk.json at or above the working
// directory, else the working directory) and the cloud assembly directory.
func locate(o *options) (appDir, cdkOut string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	appDir, output := wd, "cdk.out"
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "cdk.json")); err == nil {
			var c struct {
				Output string `json:"output"`
			}
			if err := json.Unmarshal(b, &c); err != nil {
				return "", "", fmt.Errorf("%s: %w", filepath.Join(dir, "cdk.json"), err)
			}
			appDir, output = dir, cmp.Or(c.Output, output)
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if o.cdkOut != "" {
		cdkOut, err = filepath.Abs(o.cdkOut)
		return appDir, cdkOut, err
	}
	if filepath.IsAbs(output) {
		return appDir, output, nil
	}
	return appDir, filepath.Join(appDir, output), nil
}

// synth runs `cdk synth` in appDir as --synth asks.
func synth(ctx context.Context, o *options, appDir, cdkOut string, stderr io.Writer) error {
	switch o.synth {
	case "never":
		return nil
	case "auto", "":
		if _, err := os.Stat(filepath.Join(cdkOut, "manifest.json")); err == nil {
			return nil
		}
	case "always":
	default:
		return fmt.Errorf("--synth must be auto, always or never, not %q", o.synth)
	}
	if _, err := os.Stat(filepath.Join(appDir, "cdk.json")); err != nil {
		return fmt.Errorf("no cloud assembly at %s and no cdk.json to synthesize it from (pass --cdk-out, or run it in the app's directory)", cdkOut)
	}
	cli := cmp.Or(o.cdk, os.Getenv("CDK"), "cdk")
	if _, err := exec.LookPath(cli); err != nil {
		return fmt.Errorf("no cloud assembly at %s, and no CDK CLI to synthesize it (%v): install it (npm install -g aws-cdk@2) or pass --cdk PATH, or synthesize it yourself and pass --cdk-out", cdkOut, err)
	}
	fmt.Fprintf(stderr, "dev: synthesizing %s with %s (cdk.json in %s)\n", cdkOut, cli, appDir)
	cmd := exec.CommandContext(ctx, cli, "synth", "--quiet", "--no-notices", "--output", cdkOut)
	cmd.Dir, cmd.Stdout, cmd.Stderr = appDir, stderr, stderr
	cmd.Env = append(os.Environ(), "CDK_DISABLE_CLI_TELEMETRY=true", "CDK_DISABLE_VERSION_CHECK=1")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("synth (%s synth in %s): %w", cli, appDir, err)
	}
	return nil
}

// startEmulator finds the emulator answering at endpoint or, when the module uses a checkout of
// jobkit with its emulator installed (make setup), starts it there.
func startEmulator(ctx context.Context, module, endpoint string) (*emulator.Emulator, error) {
	if emulator.Answers(endpoint) {
		return &emulator.Emulator{Endpoint: endpoint}, nil
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", libraryModule)
	cmd.Dir = module
	out, err := cmd.Output()
	root := strings.TrimSpace(string(out))
	if err == nil && root != "" {
		if _, err := os.Stat(filepath.Join(root, ".venv", "bin", "python")); err == nil {
			return emulator.Start(ctx, root, endpoint)
		}
	}
	return nil, fmt.Errorf("no emulator answers at %s: start one (moto: pip install 'moto[server]' && moto_server -p 4566; in a jobkit checkout: make emulator-up), or pass --endpoint", endpoint)
}

// sourceFlag is --source ID=PACKAGE, repeatable.
type sourceFlag map[string]string

func (f *sourceFlag) String() string { return fmt.Sprint(map[string]string(*f)) }

func (f *sourceFlag) Set(v string) error {
	id, pkg, ok := strings.Cut(v, "=")
	if !ok || id == "" || pkg == "" {
		return fmt.Errorf("want ID=PACKAGE (a function's logical id and its Go main package), got %q", v)
	}
	if *f == nil {
		*f = sourceFlag{}
	}
	(*f)[id] = pkg
	return nil
}

// whichEmulator says which emulator the run deploys onto, or refuses one it did not start at an
// endpoint nobody chose (no --endpoint, no AWS_ENDPOINT_URL) unless reuse: what answers there is
// another process's, perhaps with its own stacks on it.
func whichEmulator(kind, endpoint string, started, chosen, reuse bool) (string, error) {
	switch {
	case started:
		return fmt.Sprintf("dev: started %s at %s (stopped when this run ends)", kind, endpoint), nil
	case !chosen && !reuse:
		return "", fmt.Errorf("%s already answers at %s, and this run did not start it: another process's deployment may be on it. "+
			"Pass --reuse to deploy onto it anyway, or --endpoint http://127.0.0.1:<a free port> (or AWS_ENDPOINT_URL) for an emulator of its own", kind, endpoint)
	}
	return fmt.Sprintf("dev: using %s already running at %s (left running when this run ends)", kind, endpoint), nil
}

// emulatorKind names what answers at endpoint: LocalStack (its health route), moto (its
// dashboard), or an unknown server.
func emulatorKind(endpoint string) string {
	client := &http.Client{Timeout: 2 * time.Second}
	for _, probe := range []struct{ path, name string }{{"/_localstack/health", "LocalStack"}, {"/moto-api/", "moto"}} {
		resp, err := client.Get(strings.TrimRight(endpoint, "/") + probe.path)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return probe.name
		}
	}
	return "an emulator"
}

func openLogs(path, module string, stderr io.Writer) (io.Writer, func(), error) {
	if path == "-" {
		return stderr, func() {}, nil
	}
	path = cmp.Or(path, filepath.Join(module, ".run", "dev-functions.log"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
