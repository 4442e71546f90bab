// Package devstack runs a deployed stack (a deploy.Deployment, of any CDK app) on this machine: a
// lambdaruntime per function, an esm poller per SQS event source mapping, an esm.StreamPoller per
// DynamoDB Streams event source mapping, a taskrun.Task (a local
// process, restarted when it exits) per ECS container, and a schedfire runner
// for the deployment's schedule groups. Stop ends all of it and leaves no process behind. Up is
// the one path from a cloud assembly to a running stack: it deploys (package deploy) and starts.
package devstack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/offline/schedfire"
	"github.com/jobkit-go/jobkit/offline/taskrun"
)

// Config configures Start.
type Config struct {
	// AWS is the emulator's configuration; the pollers and the scheduler loop use it.
	AWS aws.Config
	// Deployment is what to run (deploy.Deploy's result, bootstraps built). Required.
	Deployment *deploy.Deployment
	// Endpoint is AWS_ENDPOINT_URL for the functions; default AWS.BaseEndpoint.
	Endpoint string
	// Output receives the functions' output, each line prefixed with "[<function>] "; default os.Stderr.
	Output io.Writer
	// Events sets JOBKIT_EVENTS=stdout for every function and container, so their output carries
	// each job's start and outcome as JSON lines (event.Write), which offline/tally reads.
	Events bool
	// Metrics makes the EMF lines of the functions' and containers' output metrics in the
	// emulator's CloudWatch, as CloudWatch makes them on AWS (PutMetricData, at most once a
	// second), for the console and `jobkit queues` to read.
	Metrics bool
	// Logger receives the stack's own events; default discards.
	Logger *slog.Logger
	// OnBatch, if set, is called after every settled batch.
	OnBatch func(function string, rep esm.BatchReport)
	// OnInvoke, if set, is called each time a function's process takes an invocation (see
	// lambdaruntime.Options.OnStart); it must not block.
	OnInvoke func(function, requestID string, pid int)
	// OnTaskStart, if set, is called each time a container's process starts (see ContainerName);
	// it must not block.
	OnTaskStart func(container string, pid int)
	// TaskRestartDelay and TaskMaxRestartDelay are the containers' restart delays (see
	// taskrun.Options); default 1 s doubling up to 30 s.
	TaskRestartDelay, TaskMaxRestartDelay time.Duration
	// OnFire, if set, is called after every tick the scheduler loop sends.
	OnFire func(schedfire.Firing)
	// NoScheduler leaves the schedules alone (the loop runs when the deployment has schedule groups).
	NoScheduler bool
	// SchedulerPollInterval is how often the loop lists the groups; default 5 s.
	SchedulerPollInterval time.Duration
	// StopGrace is how long Stop lets invocations in flight finish before it kills them; default 10 s.
	StopGrace time.Duration
	// NodeModules is a node_modules directory holding the AWS SDK for JavaScript (v3), which
	// Lambda's Node.js runtimes provide and this machine's Node.js lacks: it is the NODE_PATH of
	// the functions (CDK's custom-resource providers require it). Default $JOBKIT_NODE_MODULES
	// (the Makefile installs one: offline/lambdaruntime/nodesdk).
	NodeModules string
}

// Stack is a running deployment.
type Stack struct {
	log      *slog.Logger
	grace    time.Duration
	runtimes map[string]*lambdaruntime.Runtime
	tasks    map[string]*taskrun.Task // containers, by ContainerName
	agents   map[string]*emfAgent     // the CloudWatch agent stand-ins, by ContainerName (emfagent.go)
	metrics  *metricsTee              // Config.Metrics (metrics.go); nil without

	pollers  []*poller
	cancel   context.CancelFunc
	wg       sync.WaitGroup // pollers and the scheduler loop
	done     chan struct{}  // closed when every poller and the loop returned
	stopOnce sync.Once
	stopErr  error
	schedErr error

	// streamPollers are the DynamoDB Streams event source mappings (streams.go).
	streamPollers []*streamPoller
	// custom are the custom resources created (custom.go).
	custom []CustomResource
	// lambda serves the Lambda API's Invoke to the functions (lambdaapi.go).
	lambda *lambdaAPI
	// customSrv and customRuntimes serve the custom resources' requests (custom.go).
	customSrv      *answers
	customRuntimes map[string]*lambdaruntime.Runtime
}

type poller struct {
	function string
	mapping  deploy.EventSourceMapping
	p        *esm.Poller
}

// MappingStats is one event source mapping's counters.
type MappingStats struct {
	Function string
	QueueURL string
	esm.Stats
}

// Start starts a runtime for each function that an enabled event source mapping feeds, a poller for
// each such mapping and, unless NoScheduler, the scheduler's local firing loop. It returns once all
// are running; Stop ends them.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	d := cfg.Deployment
	if d == nil {
		return nil, errors.New("devstack: Config.Deployment is required")
	}
	cfg = cfg.withDefaults()
	creds, err := cfg.AWS.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("devstack: credentials: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Stack{log: cfg.Logger, grace: cfg.StopGrace, runtimes: map[string]*lambdaruntime.Runtime{},
		tasks: map[string]*taskrun.Task{}, agents: map[string]*emfAgent{}, cancel: cancel, done: make(chan struct{})}
	fail := func(err error) (*Stack, error) {
		cancel()
		for _, rt := range s.runtimes {
			_ = rt.Close()
		}
		s.closeCustom()
		if s.lambda != nil {
			_ = s.lambda.close()
		}
		s.stopContainers()
		if s.metrics != nil {
			s.metrics.close()
		}
		return nil, err
	}

	if cfg.Events {
		askForEvents(d)
	}
	if cfg.Metrics {
		s.metrics = newMetricsTee(cfg.Output, inspect.NewCloudWatch(cfg.AWS), cfg.Logger)
		cfg.Output = s.metrics
	}
	client := sqs.NewFromConfig(cfg.AWS)
	var outMu sync.Mutex
	// The Lambda API first: a custom resource's provider may invoke another function.
	if s.lambda, err = newLambdaAPI(d, func(fn deploy.Function) (*lambdaruntime.Runtime, error) {
		opts := s.runtimeOptions(&cfg, creds)
		opts.Output = &prefixWriter{mu: &outMu, w: cfg.Output, prefix: []byte("[" + fn.Name + "] ")}
		return lambdaruntime.New(fn.RuntimeFunction(invokeInstances(fn)), &opts)
	}); err != nil {
		return fail(err)
	}
	// Custom resources next: on AWS they are made while the stack deploys, before any event.
	if err := s.createCustomResources(ctx, &cfg, creds, &outMu); err != nil {
		return fail(err)
	}
	for _, fn := range d.Functions {
		mappings := slices.DeleteFunc(d.MappingsOf(fn.Name), func(m deploy.EventSourceMapping) bool { return !m.Enabled })
		streams := slices.DeleteFunc(d.StreamMappingsOf(fn.Name), func(m deploy.StreamEventSourceMapping) bool { return !m.Enabled })
		if len(mappings)+len(streams) == 0 {
			cfg.Logger.Info("function has no enabled SQS or stream event source; not started", "function", fn.Name)
			continue
		}
		if fn.Unrunnable != "" {
			cfg.Logger.Warn("function cannot run here; its event sources are not polled", "function", fn.Name, "reason", fn.Unrunnable)
			continue
		}
		rt, err := s.startRuntime(&cfg, fn, mappings, len(streams), creds, &outMu)
		if err != nil {
			return fail(err)
		}
		s.runtimes[fn.Name] = rt
		s.lambda.use(fn.Name, rt)
		for _, m := range streams {
			p, err := newStreamPoller(&cfg, rt, fn, m)
			if err != nil {
				return fail(err)
			}
			s.streamPollers = append(s.streamPollers, p)
		}
		for _, m := range mappings {
			p, err := newPoller(&cfg, client, rt, fn, m)
			if err != nil {
				return fail(err)
			}
			s.pollers = append(s.pollers, p)
		}
	}
	if err := s.startContainers(&cfg, creds, &outMu); err != nil {
		return fail(err)
	}
	runner, err := newScheduler(&cfg, client)
	if err != nil {
		return fail(err)
	}
	s.launch(runCtx, runner)
	return s, nil
}

// withDefaults fills in cfg's defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = aws.ToString(cfg.AWS.BaseEndpoint)
	}
	if cfg.Output == nil {
		cfg.Output = os.Stderr
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	cfg.NodeModules = cmp.Or(cfg.NodeModules, os.Getenv("JOBKIT_NODE_MODULES"))
	return cfg
}

// startRuntime starts fn's runtime with as many environments as its mappings may invoke at
// once (streams: one each, a shard's batches go one at a time), within its reserved concurrency.
func (s *Stack) startRuntime(cfg *Config, fn deploy.Function, mappings []deploy.EventSourceMapping, streams int, creds aws.Credentials, outMu *sync.Mutex) (*lambdaruntime.Runtime, error) {
	if fn.Bootstrap == "" {
		return nil, fmt.Errorf("devstack: function %s has no bootstrap (deployed with SkipBuild?)", fn.Name)
	}
	instances := streams
	for _, m := range mappings {
		c := m.MaximumConcurrency
		c = cmp.Or(c, esm.DefaultMaximumConcurrency)
		instances += c
	}
	if fn.ReservedConcurrency > 0 {
		instances = min(instances, fn.ReservedConcurrency)
	}
	var onStart func(string, int)
	if cfg.OnInvoke != nil {
		name := fn.Name
		onStart = func(requestID string, pid int) { cfg.OnInvoke(name, requestID, pid) }
	}
	opts := s.runtimeOptions(cfg, creds)
	opts.Output = &prefixWriter{mu: outMu, w: cfg.Output, prefix: []byte("[" + fn.Name + "] ")}
	opts.OnStart = onStart
	rt, err := lambdaruntime.New(fn.RuntimeFunction(instances), &opts)
	if err != nil {
		return nil, fmt.Errorf("devstack: %w", err)
	}
	return rt, nil
}

// runtimeOptions are the options every function's runtime shares: the deployment's region and
// account, the emulator and its credentials, the Lambda API's endpoint (lambdaapi.go) and
// NODE_PATH (Config.NodeModules).
func (s *Stack) runtimeOptions(cfg *Config, creds aws.Credentials) lambdaruntime.Options {
	d := cfg.Deployment
	opts := lambdaruntime.Options{
		Region: d.Region, AccountID: d.AccountID, Endpoint: cfg.Endpoint,
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken,
		Logger: cfg.Logger, ExtraEnv: map[string]string{envLambdaEndpoint: s.lambda.url},
	}
	if cfg.NodeModules != "" {
		opts.ExtraEnv["NODE_PATH"] = cfg.NodeModules
	}
	return opts
}

// newPoller makes the poller of mapping m, invoking rt (function fn's runtime).
func newPoller(cfg *Config, client *sqs.Client, rt *lambdaruntime.Runtime, fn deploy.Function, m deploy.EventSourceMapping) (*poller, error) {
	name := fn.Name
	var onBatch func(esm.BatchReport)
	if cfg.OnBatch != nil {
		onBatch = func(rep esm.BatchReport) { cfg.OnBatch(name, rep) }
	}
	conc := m.MaximumConcurrency
	if fn.ReservedConcurrency > 0 && (conc == 0 || conc > fn.ReservedConcurrency) {
		conc = max(fn.ReservedConcurrency, esm.MinMaximumConcurrency)
	}
	p, err := esm.New(client, rt, esm.Mapping{
		QueueURL: m.QueueURL, QueueARN: m.QueueARN, BatchSize: m.BatchSize,
		MaximumBatchingWindow: m.MaximumBatchingWindow, MaximumConcurrency: conc,
		ReportBatchItemFailures: m.ReportBatchItemFailures,
	}, &esm.Options{Region: cfg.Deployment.Region, Logger: cfg.Logger.With("function", name), OnBatch: onBatch})
	if err != nil {
		return nil, fmt.Errorf("devstack: mapping %s: %w", m.LogicalID, err)
	}
	return &poller{function: name, mapping: m, p: p}, nil
}

// newScheduler returns the firing loop of the deployment's schedule groups, or nil when
// cfg.NoScheduler or the deployment has none.
func newScheduler(cfg *Config, client *sqs.Client) (*schedfire.Runner, error) {
	if cfg.NoScheduler {
		return nil, nil
	}
	d := cfg.Deployment
	groups := map[string]bool{}
	for _, g := range d.ScheduleGroups {
		groups[g.Name] = true
	}
	for _, sc := range d.Schedules {
		groups[sc.Group] = true
	}
	if len(groups) == 0 {
		return nil, nil
	}
	var names []string
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	runner, err := schedfire.New(schedfire.Config{
		SQS: client, Scheduler: awsscheduler.NewFromConfig(cfg.AWS), Groups: names,
		PollInterval: cfg.SchedulerPollInterval, Logger: cfg.Logger, OnFire: cfg.OnFire,
	})
	if err != nil {
		return nil, fmt.Errorf("devstack: scheduler: %w", err)
	}
	return runner, nil
}

// launch runs the pollers and the scheduler loop (if any) until runCtx ends; Done is closed
// when all have returned.
func (s *Stack) launch(runCtx context.Context, runner *schedfire.Runner) {
	s.launchStreams(runCtx)
	for _, p := range s.pollers {
		s.wg.Go(func() {
			_ = p.p.Run(runCtx)
		})
		s.log.Info("event source mapping started", "function", p.function, "queue", p.mapping.QueueURL,
			"batch_size", p.p.Mapping().BatchSize, "maximum_concurrency", p.p.Mapping().MaximumConcurrency)
	}
	if runner != nil {
		s.wg.Go(func() {
			if err := runner.Run(runCtx); err != nil {
				s.schedErr = err
				s.log.Error("scheduler loop stopped", "error", err)
			}
		})
	}
	go func() {
		s.wg.Wait()
		close(s.done)
	}()
}

// Stop stops polling and the scheduler loop, lets the invocations in flight finish for up to
// StopGrace, then kills every function process and waits until they are gone. It is safe to call
// more than once.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		// Containers drain on SIGTERM while the invocations in flight finish.
		containersStopped := make(chan struct{})
		go func() { s.stopContainers(); close(containersStopped) }()
		defer func() { <-containersStopped }()
		t := time.NewTimer(s.grace)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.log.Warn("invocations still in flight after the grace period; killing them", "grace", s.grace.String())
		}
		var errs []error
		for name, rt := range s.runtimes {
			if err := rt.Close(); err != nil {
				errs = append(errs, fmt.Errorf("function %s: %w", name, err))
			}
		}
		s.closeCustom()
		if err := s.lambda.close(); err != nil {
			errs = append(errs, fmt.Errorf("functions run by Invoke: %w", err))
		}
		<-s.done
		<-containersStopped
		if s.metrics != nil {
			s.metrics.close() // what the last batches wrote
		}
		s.stopErr = errors.Join(append(errs, s.schedErr)...)
	})
	return s.stopErr
}

// Done is closed when every poller and the scheduler loop have returned (after Stop).
func (s *Stack) Done() <-chan struct{} { return s.done }

// Stats returns each event source mapping's counters, in start order.
func (s *Stack) Stats() []MappingStats {
	out := make([]MappingStats, len(s.pollers))
	for i, p := range s.pollers {
		out[i] = MappingStats{Function: p.function, QueueURL: p.mapping.QueueURL, Stats: p.p.Stats()}
	}
	return out
}

// Functions returns the names of the functions running, sorted.
func (s *Stack) Functions() []string {
	return slices.Sorted(maps.Keys(s.runtimes))
}

// PIDs returns the process ids of every function environment and container running now.
func (s *Stack) PIDs() []int {
	var pids []int
	for _, rt := range s.runtimes {
		pids = append(pids, rt.PIDs()...)
	}
	for _, t := range s.tasks {
		if pid := t.PID(); pid > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// prefixWriter prefixes each line with the function's name.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var buf bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		buf.Write(p.prefix)
		buf.Write(line)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

// askForEvents sets JOBKIT_EVENTS=stdout in the environment of every function and container of d.
func askForEvents(d *deploy.Deployment) {
	for i := range d.Functions {
		if d.Functions[i].Env == nil {
			d.Functions[i].Env = map[string]string{}
		}
		d.Functions[i].Env[contract.EnvEvents] = "stdout"
	}
	for i := range d.Containers {
		if d.Containers[i].Env == nil {
			d.Containers[i].Env = map[string]string{}
		}
		d.Containers[i].Env[contract.EnvEvents] = "stdout"
	}
}
