package devrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
)

// Config configures Run.
type Config struct {
	// AWS is the emulator's configuration (BaseEndpoint set). Required.
	AWS aws.Config
	// CDKOut is the cloud assembly directory. Required.
	CDKOut string
	// ModuleDir is where a function's "jobkit:source" package is found when its template does
	// not record its module ("jobkit:module"); default the parent of CDKOut.
	ModuleDir string
	// Sources maps the logical id of a Go function whose template names no source package (an
	// app jobkit's constructs did not make) to its main package in ModuleDir (deploy.Options.Sources).
	Sources map[string]string
	// BuildDir receives the functions' bootstraps; default <ModuleDir>/.run/functions.
	BuildDir string
	// Prefix goes before every stack name, so that runs can share an emulator; default none.
	Prefix string
	// Once ends the run when every job queue has stayed empty, with nothing running, for
	// QuietFor after a first job was seen. Otherwise the run goes on until ctx ends.
	Once bool
	// QuietFor is how long the queues stay empty before a Once run ends; default 3 s.
	QuietFor time.Duration
	// Interval is how often Progress is called; default 3 s.
	Interval time.Duration
	// Keep leaves the deployment on the emulator; by default Run destroys it before returning.
	Keep bool
	// FunctionOutput receives the functions' output and the stack's own log; nil discards.
	FunctionOutput io.Writer
	// Note receives one line per step (deployed, started, stopping); nil discards.
	Note func(string)
	// Ready, if set, is called once the stack runs, with the stacks' outputs as exports.
	Ready func(exports []Export)
	// Progress, if set, is called every Interval with the current census.
	Progress func(*Census)
}

// Export is a stack output as an environment variable.
type Export struct{ Name, Value string }

// String returns the export as a POSIX shell line: export NAME='value'.
func (e Export) String() string {
	return "export " + e.Name + "='" + strings.ReplaceAll(e.Value, "'", `'\''`) + "'"
}

// Exports returns the outputs of d's stacks, sorted by name, then JOBKIT_STACK (the first stack
// that outputs job queues, for the jobkit CLI's --stack), AWS_ENDPOINT_URL and AWS_REGION for the
// emulator at endpoint, and the emulator's test credentials
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) unless the environment has a key id already: what a
// producer needs to reach the running stack on a machine without AWS credentials.
func Exports(d *deploy.Deployment, endpoint string) []Export {
	var out []Export
	for _, s := range d.Stacks {
		for k, v := range s.Outputs {
			out = append(out, Export{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if stack := queueStack(d); stack != "" {
		out = append(out, Export{contract.EnvStack, stack})
	}
	out = append(out, Export{"AWS_ENDPOINT_URL", endpoint}, Export{"AWS_REGION", d.Region})
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// The emulator takes any credentials; the SDK needs some.
		out = append(out, Export{"AWS_ACCESS_KEY_ID", "test"}, Export{"AWS_SECRET_ACCESS_KEY", "test"})
	}
	return out
}

// queueStack returns the name of the first of d's stacks (in deployment order) whose outputs name
// a job queue, or "".
func queueStack(d *deploy.Deployment) string {
	for _, s := range d.Stacks {
		for k := range s.Outputs {
			if strings.HasPrefix(k, contract.OutputQueuePrefix) {
				return s.Name
			}
		}
	}
	return ""
}

// Result is what a run did.
type Result struct {
	// Census is the final count, after the stack stopped (Counter.Settle: its Tally names the
	// lost jobs and those left on their queues).
	Census *Census
	// Deployment is what was deployed (destroyed again unless Config.Keep).
	Deployment *deploy.Deployment
	// Elapsed is the time from the start of the stack to its stop.
	Elapsed time.Duration
}

// Run deploys the cloud assembly onto the emulator, runs it until ctx ends (or, with Once, until
// its job queues drain), then stops the stack, counts what became of the jobs (Counter.Settle:
// the lost ones named) and destroys the deployment. The emulator itself is the caller's. The Result is non-nil whenever the stack
// started, also with an error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.CDKOut == "" {
		return nil, errors.New("devrun: Config.CDKOut is required")
	}
	cfg = cfg.withDefaults()
	bg := context.WithoutCancel(ctx)
	log := slog.New(slog.NewJSONHandler(cfg.FunctionOutput, nil))
	cfg.AWS.Logger = logging.NewStandardLogger(cfg.FunctionOutput)
	var counter *Counter
	lines := &LineReader{W: cfg.FunctionOutput}
	start := time.Now()
	running, err := devstack.Up(ctx, devstack.UpConfig{
		Deploy: deploy.Options{CDKOut: cfg.CDKOut, ModuleDir: cfg.ModuleDir, BuildDir: cfg.BuildDir, Prefix: cfg.Prefix, Sources: cfg.Sources, Logger: log},
		Config: devstack.Config{AWS: cfg.AWS, Logger: log, Output: lines, Events: true, Metrics: true},
		Prepare: func(_ context.Context, d *deploy.Deployment, sc *devstack.Config) error {
			counter = NewCounter(sqs.NewFromConfig(cfg.AWS), d)
			lines.Read = counter.ReadLine
			sc.OnBatch = counter.OnBatch
			cfg.Note(fmt.Sprintf("dev: deployed %d stacks in %s: %d functions, %d job queues, %d tables, %d schedules (%d resources not needed offline)",
				len(d.Stacks), time.Since(start).Round(100*time.Millisecond), len(d.Functions), len(counter.Queues()), len(d.Tables),
				len(d.Schedules), len(d.Skipped)))
			for _, fn := range d.Functions {
				if fn.Unrunnable != "" {
					cfg.Note(fmt.Sprintf("dev: function %s (%s) skipped: %s", fn.LogicalID, fn.Stack, fn.Unrunnable))
				}
			}
			return nil
		},
		KeepOnError: cfg.Keep,
	})
	if err != nil {
		var exists *deploy.StackExistsError
		if errors.As(err, &exists) {
			return nil, fmt.Errorf("%w (a run with --keep, or one that crashed, left it: restart the emulator, or pass a --prefix)", err)
		}
		return nil, err
	}
	for _, cr := range running.Stack.CustomResources() {
		cfg.Note(fmt.Sprintf("dev: custom resource %s (%s, %s) created by its provider: %s", cr.LogicalID, cr.Type, cr.Stack, cr.PhysicalResourceID))
	}
	res := &Result{Deployment: running.Deployment}
	if !cfg.Keep {
		defer func() {
			if derr := running.Deployment.Destroy(bg); derr != nil {
				cfg.Note("dev: destroy: " + derr.Error())
			}
		}()
	}
	started := time.Now()
	cfg.Note("dev: started " + strings.Join(running.Stack.Functions(), ", "))
	if cfg.Ready != nil {
		cfg.Ready(Exports(running.Deployment, aws.ToString(cfg.AWS.BaseEndpoint)))
	}
	runErr := watch(ctx, cfg, counter)
	if ctx.Err() != nil {
		cfg.Note("dev: stopping (jobs in flight finish first)")
	}
	if !cfg.Keep {
		if err := running.Stack.DeleteCustomResources(bg); err != nil {
			cfg.Note("dev: " + err.Error())
		}
	}
	if err := running.Stack.Stop(); err != nil {
		cfg.Note("dev: stop: " + err.Error())
	}
	res.Elapsed = time.Since(started)
	var final *Census
	for try := 1; ; try++ {
		if final, err = counter.Settle(bg); err == nil || try == 3 {
			break
		}
		time.Sleep(time.Second)
	}
	res.Census = final
	return res, errors.Join(runErr, err)
}

func (cfg Config) withDefaults() Config {
	if cfg.QuietFor <= 0 {
		cfg.QuietFor = 3 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 3 * time.Second
	}
	if cfg.FunctionOutput == nil {
		cfg.FunctionOutput = io.Discard
	}
	if cfg.Note == nil {
		cfg.Note = func(string) {}
	}
	return cfg
}

// watch calls Progress every Interval until ctx ends or, with Once, the queues drain.
func watch(ctx context.Context, cfg Config, counter *Counter) error {
	tick := min(cfg.Interval, time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var quietSince, shown time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c, err := counter.Census(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			cfg.Note("dev: count: " + err.Error())
			continue
		}
		if cfg.Progress != nil && time.Since(shown) >= cfg.Interval {
			shown = time.Now()
			cfg.Progress(c)
		}
		if !cfg.Once {
			continue
		}
		if c.Seen == 0 || c.Total.Queued+c.Total.Running > 0 {
			quietSince = time.Time{}
			continue
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		}
		if time.Since(quietSince) >= cfg.QuietFor {
			return nil
		}
	}
}

// LineReader passes output on to W and each whole line of it, without its newline, to Read (when
// not nil): how the dev programs read the functions' output as it goes by. Read may be set until
// the first Write.
type LineReader struct {
	W    io.Writer
	Read func(line []byte)
	mu   sync.Mutex
	buf  []byte
}

// Write implements io.Writer.
func (l *LineReader) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if l.Read != nil {
			l.Read(l.buf[:i])
		}
		l.buf = l.buf[i+1:]
	}
	l.mu.Unlock()
	return l.W.Write(p)
}
