package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// StackConfig configures StartStack.
type StackConfig struct {
	// AWS is the emulator's configuration (its BaseEndpoint is the emulator). Required.
	AWS aws.Config
	// CDKOut is the cloud assembly; default "cdk.out". ModuleDir and BuildDir as in deploy.Options.
	CDKOut, ModuleDir, BuildDir string
	// Prefix goes before every stack and export name; default "chaos<random>-".
	Prefix string
	// Proxy configures the fault proxy every AWS call of the functions, the event source
	// mappings and Producer goes through; nil means no faults (the proxy still counts).
	Proxy *faultproxy.Options
	// Instrumented runs the instrumented builds of the sample functions (instrument.Binaries):
	// the fault instructions in a job's args (instrument.Faults) take effect.
	Instrumented bool
	// Effects creates an effects table and sets instrument.EnvEffectsTable on every function,
	// which run instrumented (see Instrumented) to count each job's effects in it.
	Effects bool
	// Customize, if set, runs after the deployment and before the functions start, e.g. to
	// change a function's environment (Stack.Deployment) or a queue attribute.
	Customize func(ctx context.Context, s *Stack) error
	// OnBatch and OnInvoke are devstack.Config's hooks.
	OnBatch  func(function string, rep esm.BatchReport)
	OnInvoke func(function, requestID string, pid int)
	// Output receives the functions' output; default discards.
	Output io.Writer
	// Logger receives the stack's events; default discards.
	Logger *slog.Logger
}

// Stack is the sample stack deployed on the emulator and running behind a fault proxy.
type Stack struct {
	// Deployment is what was deployed.
	Deployment *deploy.Deployment
	// Proxy is the fault proxy in front of the emulator.
	Proxy *faultproxy.Proxy
	// Direct calls the emulator itself (checks, setup); Proxied goes through the proxy.
	Direct, Proxied aws.Config
	// EffectsTable is the effects table ("" without StackConfig.Effects).
	EffectsTable string

	up *devstack.Running
}

// StartStack deploys cfg.CDKOut onto the emulator, starts the fault proxy in front of it and
// runs every function and event source mapping of the deployment with their AWS calls going
// through the proxy. The schedules' firing loop does not run: the jobs of a run are the ones it
// enqueues. Close stops and removes everything.
func StartStack(ctx context.Context, cfg StackConfig) (s *Stack, err error) {
	if cfg.AWS.BaseEndpoint == nil || *cfg.AWS.BaseEndpoint == "" {
		return nil, errors.New("chaos: StackConfig.AWS needs the emulator as BaseEndpoint")
	}
	if cfg.Prefix == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		cfg.Prefix = "chaos" + hex.EncodeToString(b[:]) + "-"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s = &Stack{Direct: cfg.AWS}
	defer func() {
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
	}()
	s.Proxy, err = faultproxy.Start(aws.ToString(cfg.AWS.BaseEndpoint), cfg.Proxy)
	if err != nil {
		return s, err
	}
	s.Proxied = s.Proxy.Config(cfg.AWS)
	out := cfg.Output
	if out == nil {
		out = io.Discard
	}
	opts := deploy.Options{CDKOut: cfg.CDKOut, ModuleDir: cfg.ModuleDir, BuildDir: cfg.BuildDir, Prefix: cfg.Prefix, Logger: log}
	if cfg.Instrumented || cfg.Effects {
		opts.Sources = instrument.Binaries
	}
	s.up, err = devstack.Up(ctx, devstack.UpConfig{
		Deploy: opts, DeployAWS: &s.Direct,
		Config: devstack.Config{
			AWS: s.Proxied, Endpoint: s.Proxy.URL(), Output: out, Logger: log, Events: true,
			OnBatch: cfg.OnBatch, OnInvoke: cfg.OnInvoke, NoScheduler: true,
			// The fault plan kills the container's process every few jobs: restart it within
			// 2 s, as a service replaces a stopped task, rather than backing off to 30 s as for
			// a process that keeps failing on its own.
			TaskMaxRestartDelay: 2 * time.Second,
		},
		Prepare: func(ctx context.Context, d *deploy.Deployment, _ *devstack.Config) error {
			s.Deployment = d
			if err := d.Whole(); err != nil {
				return err
			}
			return s.prepare(ctx, cfg)
		},
	})
	if err != nil {
		return s, fmt.Errorf("chaos: %w", err)
	}
	return s, nil
}

// prepare creates the effects table when cfg asks for it (naming it to every function and
// container) and runs cfg.Customize, before the functions and containers start.
func (s *Stack) prepare(ctx context.Context, cfg StackConfig) error {
	if cfg.Effects {
		s.EffectsTable = cfg.Prefix + "effects"
		if err := createEffectsTable(ctx, dynamodb.NewFromConfig(s.Direct), s.EffectsTable); err != nil {
			s.EffectsTable = ""
			return err
		}
		for i := range s.Deployment.Functions {
			f := &s.Deployment.Functions[i]
			if f.Env == nil {
				f.Env = map[string]string{}
			}
			f.Env[instrument.EnvEffectsTable] = s.EffectsTable
		}
		for i := range s.Deployment.Containers {
			s.Deployment.Containers[i].Env[instrument.EnvEffectsTable] = s.EffectsTable
		}
	}
	if cfg.Customize != nil {
		return cfg.Customize(ctx, s)
	}
	return nil
}

// Dev is the running devstack (nil after a failed start).
func (s *Stack) Dev() *devstack.Stack {
	if s.up == nil {
		return nil
	}
	return s.up.Stack
}

// Worker returns the function that runs jobs of kind, or nil: the function built from
// functions/<queue> for the kind's sample queue (samplejobs.Queues), or — a priority lane's
// queue, whose lanes share one source — the function of the lane's Worker construct, named
// after the lane's queue ("NotifyDefault").
func (s *Stack) Worker(kind string) *deploy.Function {
	q, ok := samplejobs.Queues[kind]
	if !ok {
		return nil
	}
	for i := range s.Deployment.Functions {
		f := &s.Deployment.Functions[i]
		if strings.TrimSuffix(f.Source, "/") == "functions/"+strings.ToLower(q) || strings.HasPrefix(f.LogicalID, q+"Function") {
			return f
		}
	}
	return nil
}

// Container returns the container (run as a local process) whose source is the kind's
// functions/<queue> package, or nil: the sample runs its transcodes in containers.
func (s *Stack) Container(kind string) *deploy.Container {
	q, ok := samplejobs.Queues[kind]
	if !ok {
		return nil
	}
	for i := range s.Deployment.Containers {
		c := &s.Deployment.Containers[i]
		if strings.TrimSuffix(c.Source, "/") == "functions/"+strings.ToLower(q) {
			return c
		}
	}
	return nil
}

// WorkerEnv returns the environment of the kind's function or container, or nil.
func (s *Stack) WorkerEnv(kind string) map[string]string {
	if f := s.Worker(kind); f != nil {
		return f.Env
	}
	if c := s.Container(kind); c != nil {
		return c.Env
	}
	return nil
}

// QueueURL returns the queue the kind's worker consumes, and DLQURL its dead-letter queue.
func (s *Stack) QueueURL(kind string) string { return s.env(kind, contract.EnvQueueURL) }

// DLQURL returns the dead-letter queue of the kind's queue.
func (s *Stack) DLQURL(kind string) string { return s.env(kind, contract.EnvDLQURL) }

func (s *Stack) env(kind, name string) string { return s.WorkerEnv(kind)[name] }

// MaxAttempts maps each sample kind to its worker's JOBKIT_MAX_ATTEMPTS.
func (s *Stack) MaxAttempts() map[string]int {
	out := map[string]int{}
	for kind := range samplejobs.Queues {
		if n, err := strconv.Atoi(s.env(kind, contract.EnvMaxAttempts)); err == nil {
			out[kind] = n
		}
	}
	return out
}

// Producer returns a jobs client routing the sample kinds to their queues, through the proxy.
func (s *Stack) Producer() (*jobs.Client, error) {
	queues := map[string]string{}
	for kind := range samplejobs.Queues {
		if u := s.QueueURL(kind); u != "" {
			queues[kind] = u
		}
	}
	return jobs.NewClient(sqs.NewFromConfig(s.Proxied), jobs.ClientOptions{Queues: queues, MaxRetries: 10})
}

// Stop stops the functions and the event source mappings (see devstack.Stack.Stop).
func (s *Stack) Stop() error {
	if s.up == nil {
		return nil
	}
	return s.up.Stack.Stop()
}

// Close stops the stack, removes the deployment and the effects table from the emulator and
// closes the proxy.
func (s *Stack) Close(ctx context.Context) error {
	var errs []error
	if s.up != nil {
		errs = append(errs, s.up.Down(ctx))
	}
	if s.EffectsTable != "" {
		_, err := dynamodb.NewFromConfig(s.Direct).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.EffectsTable)})
		errs = append(errs, err)
	}
	if s.Proxy != nil {
		errs = append(errs, s.Proxy.Close())
	}
	return errors.Join(errs...)
}

func createEffectsTable(ctx context.Context, db *dynamodb.Client, name string) error {
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(instrument.EffectsIDAttr), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(instrument.EffectsIDAttr), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		return fmt.Errorf("chaos: create the effects table: %w", err)
	}
	w := dynamodb.NewTableExistsWaiter(db)
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("chaos: effects table: %w", err)
	}
	return nil
}

// LeaveOutEmailRateLimit runs the email function without its rate limit
// (instrument.EnvNoRateLimit): for runs that measure or stress the rest of the stack.
func (s *Stack) LeaveOutEmailRateLimit() error { return s.setEmailEnv(instrument.EnvNoRateLimit) }

// UseSampleMailer runs the email function with the sample's own mailer
// (instrument.EnvSampleMailer): for runs that count the kit's requests, which the keyed test
// provider's writes would add to.
func (s *Stack) UseSampleMailer() error { return s.setEmailEnv(instrument.EnvSampleMailer) }

func (s *Stack) setEmailEnv(name string) error {
	email := s.Worker(samplejobs.KindSendEmail)
	if email == nil {
		return errors.New("chaos: the deployment has no email function")
	}
	if email.Env == nil {
		email.Env = map[string]string{}
	}
	email.Env[name] = "1"
	return nil
}
