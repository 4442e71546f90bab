// Package conformance checks an AWS endpoint — an emulator or AWS itself — against the SQS and
// DynamoDB behaviours jobkit's runtime relies on, as AWS documents them: visibility changes and
// their errors, FIFO group locks and order, redrive after maxReceiveCount, batch and size limits,
// conditional writes returning the old item, transaction cancellation reasons, TTL settings.
//
// Each Check is a small function that returns nil when the endpoint behaves as the AWS
// documentation it cites says, or an error describing what it did instead. Where an emulator is
// known to deviate, KnownDifferences says so with the documentation it contradicts (mirrored in
// docs/emulators.md); Run reports such a check as a known difference rather than a failure, and
// reports a listed difference the emulator no longer shows as a failure, so the list stays true.
//
// `make conformance` runs the suite against moto, LocalStack, ElasticMQ and DynamoDB Local through
// localstack/cmd/conformance; `make test` runs it against moto as Go tests.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Service is an AWS service the suite checks.
type Service string

// The services the suite checks.
const (
	SQS      Service = "sqs"
	DynamoDB Service = "dynamodb"
)

// Check is one documented behaviour.
type Check struct {
	Name    string  // "<service>/<behaviour>", stable: KnownDifferences and docs name it
	Service Service // the service it exercises
	Doc     string  // the AWS documentation that states the behaviour
	Run     func(ctx context.Context, env *Env) error
}

// Checks returns the suite, SQS checks first, in a stable order.
func Checks() []Check {
	out := append(slices.Clone(sqsChecks), dynamoDBChecks...)
	return out
}

// Env is what a check runs against: clients for the endpoint and a unique prefix for the
// resources it creates (which it removes through Defer).
type Env struct {
	SQS      *sqs.Client
	DynamoDB *dynamodb.Client

	prefix  string
	retried atomic.Bool // a call of this check made more than one attempt
	mu      sync.Mutex
	defers  []func(context.Context)
	notes   []string
}

// Name returns a resource name unique to this run: prefix, the given part and a random suffix,
// letters, digits and '-' only, at most 70 characters (room for ".fifo" within SQS's 80).
func (e *Env) Name(part string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	n := e.prefix + "-" + part + "-" + hex.EncodeToString(b[:])
	if len(n) > 70 {
		n = n[len(n)-70:]
		n = strings.TrimLeft(n, "-")
	}
	return n
}

// Note records an observation of a passing check (the error code an emulator chose among those
// AWS documents, say), reported with the result.
func (e *Env) Note(s string) {
	e.mu.Lock()
	e.notes = append(e.notes, s)
	e.mu.Unlock()
}

// Defer registers fn to run when the check ends (cleanup), last registered first.
func (e *Env) Defer(fn func(ctx context.Context)) {
	e.mu.Lock()
	e.defers = append(e.defers, fn)
	e.mu.Unlock()
}

func (e *Env) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.mu.Lock()
	defers := e.defers
	e.defers = nil
	e.mu.Unlock()
	for i := len(defers) - 1; i >= 0; i-- {
		defers[i](ctx)
	}
}

// Outcome is how a check ended on one emulator.
type Outcome string

// The outcomes. Stale is a listed known difference the emulator no longer shows: it counts as a
// failure until the list is corrected.
const (
	Passed          Outcome = "passed"
	Failed          Outcome = "failed"
	KnownDifference Outcome = "known_difference"
	Stale           Outcome = "stale_known_difference"
)

// Result is one check's outcome.
type Result struct {
	Check    string
	Outcome  Outcome
	Err      error         // what the emulator did instead (nil when it behaved as documented)
	Known    *Difference   // the listed difference, for KnownDifference and Stale
	Notes    []string      // what the check noted on the way (Env.Note)
	Duration time.Duration // wall time of the check
}

// Report is a run of the suite against one emulator.
type Report struct {
	Emulator string
	Results  []Result
}

// Count returns how many results had the outcome.
func (r Report) Count(o Outcome) int {
	n := 0
	for _, res := range r.Results {
		if res.Outcome == o {
			n++
		}
	}
	return n
}

// Failed returns the number of failures, stale known differences included.
func (r Report) Failed() int { return r.Count(Failed) + r.Count(Stale) }

// Summary is the report's one-line verdict:
// "CONFORMANCE emulator=<name> passed=<n> failed=<n> known_differences=<n>".
func (r Report) Summary() string {
	return fmt.Sprintf("CONFORMANCE emulator=%s passed=%d failed=%d known_differences=%d",
		r.Emulator, r.Count(Passed), r.Failed(), r.Count(KnownDifference))
}

// Lines returns one line per result that is not a plain pass, in check order.
func (r Report) Lines() []string {
	var out []string
	for _, res := range r.Results {
		switch res.Outcome {
		case Failed:
			out = append(out, fmt.Sprintf("FAIL %s %s: %v", r.Emulator, res.Check, res.Err))
		case Stale:
			out = append(out, fmt.Sprintf("STALE %s %s: listed as a known difference (%s) but behaves as documented; remove it from KnownDifferences and docs/emulators.md",
				r.Emulator, res.Check, res.Known.Reason))
		case KnownDifference:
			out = append(out, fmt.Sprintf("KNOWN %s %s: %v (contradicts %s)", r.Emulator, res.Check, res.Err, res.Known.Doc))
		}
	}
	return out
}

// Options shapes a run. Nil means every service, 8 checks at a time.
type Options struct {
	Services    []Service // the services the endpoint serves; empty means all
	Only        []string  // run only these checks (by name); empty means all
	Parallelism int       // checks at a time; 0 means 8
}

// Run runs the suite's checks for the services against cfg's endpoint and judges each result
// against the known differences of emulator.
func Run(ctx context.Context, cfg aws.Config, emulator string, opts *Options) Report {
	if opts == nil {
		opts = &Options{}
	}
	par := opts.Parallelism
	if par <= 0 {
		par = 8
	}
	var checks []Check
	for _, c := range Checks() {
		if len(opts.Services) > 0 && !slices.Contains(opts.Services, c.Service) {
			continue
		}
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, c.Name) {
			continue
		}
		checks = append(checks, c)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	runID := "jkc-" + hex.EncodeToString(b[:])

	results := make([]Result, len(checks))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = judge(emulator, c, runCheck(ctx, cfg, runID, c))
		})
	}
	wg.Wait()
	return Report{Emulator: emulator, Results: results}
}

// RunCheck runs one check against cfg's endpoint and returns its error, for tests that run each
// check as a subtest.
func RunCheck(ctx context.Context, cfg aws.Config, c Check) error {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return runCheck(ctx, cfg, "jkc-"+hex.EncodeToString(b[:]), c).Err
}

// newEnv returns an Env whose clients note when a call took more than one attempt: a retried
// ReceiveMessage or conditional write whose first answer was lost has acted already, and what the
// retry then sees is not the emulator's behaviour.
func newEnv(cfg aws.Config, prefix string) *Env {
	env := &Env{prefix: prefix}
	opt := func(o *middleware.Stack) error { return noteRetries(o, &env.retried) }
	env.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, opt) })
	env.DynamoDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, opt) })
	return env
}

type attemptsKey struct{}

// noteRetries sets retried when a call makes a second attempt.
func noteRetries(stack *middleware.Stack, retried *atomic.Bool) error {
	err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("conformanceAttemptCounter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, attemptsKey{}, new(atomic.Int32)), in)
		}), middleware.Before)
	if err != nil {
		return err
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("conformanceAttempts",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if n, ok := ctx.Value(attemptsKey{}).(*atomic.Int32); ok && n.Add(1) > 1 {
				retried.Store(true)
			}
			return next.HandleFinalize(ctx, in)
		}), "Retry", middleware.After)
}

// runCheck runs c with resources named under runID. A check that fails after one of its calls
// was retried runs once more on fresh resources, and that second run's result stands.
func runCheck(ctx context.Context, cfg aws.Config, runID string, c Check) Result {
	start := time.Now()
	env := newEnv(cfg, runID+"-"+shortName(c.Name))
	res := runOnce(ctx, env, c)
	if res.Err != nil && env.retried.Load() {
		res = runOnce(ctx, newEnv(cfg, runID+"-"+shortName(c.Name)+"-2"), c)
	}
	res.Check, res.Duration = c.Name, time.Since(start)
	return res
}

func runOnce(ctx context.Context, env *Env, c Check) (res Result) {
	defer env.cleanup()
	defer func() {
		if p := recover(); p != nil {
			res.Err = fmt.Errorf("check panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := c.Run(ctx, env)
	env.mu.Lock()
	defer env.mu.Unlock()
	return Result{Err: err, Notes: env.notes}
}

// Judge turns a check's error into an outcome for emulator, given the known differences.
func judge(emulator string, c Check, res Result) Result {
	known := FindDifference(emulator, c.Name)
	res.Known = known
	switch {
	case res.Err == nil && known == nil:
		res.Outcome = Passed
	case res.Err == nil:
		res.Outcome = Stale
	case known == nil:
		res.Outcome = Failed
	default:
		res.Outcome = KnownDifference
	}
	return res
}

// Judge returns the outcome of a check's error for emulator, given the known differences.
func Judge(emulator, check string, err error) Outcome {
	return judge(emulator, Check{Name: check}, Result{Err: err}).Outcome
}

// shortName turns "sqs/fifo-group-lock" into "fifo-group-lock", for resource names.
func shortName(check string) string {
	_, after, _ := strings.Cut(check, "/")
	if len(after) > 28 {
		after = after[:28]
	}
	return strings.Trim(after, "-")
}

// Emulators returns the emulator names KnownDifferences mentions, sorted.
func Emulators() []string {
	seen := map[string]bool{}
	for _, d := range KnownDifferences {
		seen[d.Emulator] = true
	}
	var out []string
	for e := range seen {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}
