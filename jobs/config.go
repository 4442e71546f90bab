package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
)

// Defaults of Config (and of the environment variables ConfigFromEnv reads) besides those the
// constructs size queues by (contract.DefaultMaxAttempts and the others).
const (
	defaultSafetyMargin = 2 * time.Second
	// MaxVisibility is the longest visibility timeout SQS allows (12 h): no backoff or snooze is
	// longer.
	MaxVisibility = 12 * time.Hour
)

// BackoffFunc returns how long a job waits before its next attempt after attempt failed
// (attempt is 1 on the first delivery).
type BackoffFunc func(attempt int) time.Duration

// Config configures the worker runtime (NewLambdaHandler). ConfigFromEnv fills it from the
// environment the infra Worker construct sets.
type Config struct {
	// QueueURL is the queue the function consumes (required). Its name is the Queue dimension of
	// the metrics; a ".fifo" suffix means FIFO semantics.
	QueueURL string
	// DLQURL is the dead-letter queue the runtime sends permanent failures to (required).
	DLQURL string
	// MaxAttempts is how many attempts a job gets (see Deliveries for what counts as one); a
	// retryable failure on the last is dead-lettered (ReasonAttemptsUsed). Default 5. Set the
	// queue's redrive maxReceiveCount higher, as a safety net for crashes: snoozes and
	// deliveries that did not run count as receives there.
	MaxAttempts int
	// VisibilityTimeout is the queue's visibility timeout. The heartbeat extends the visibility of
	// a batch's messages to this much every third of it, counting from the start of the
	// invocation: keep the event source mapping's batching window well under a third of it, as
	// messages it holds back lose visibility meanwhile. Default 30 s.
	VisibilityTimeout time.Duration
	// Concurrency is how many records of a batch run at once (FIFO: how many groups). Default 10.
	Concurrency int
	// BackoffBase and BackoffCap shape the retry delay: full jitter, uniform in
	// [0, min(BackoffCap, BackoffBase·2^(attempt-1))], never above 12 h. Defaults 1 s and 15 min.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// Backoff replaces the computed delay when set (BackoffBase and BackoffCap are then unused).
	Backoff BackoffFunc
	// FunctionName is written on dead-lettered messages (AttrFunction).
	FunctionName string
	// SafetyMargin is the time kept before the Lambda deadline: jobs' contexts end this much
	// before it, leaving the runtime time to report. Default 2 s (at most half the time left).
	SafetyMargin time.Duration
	// JobTimeout is each job's own time limit; zero means only the Lambda deadline applies.
	JobTimeout time.Duration
	// Logger receives the runtime's log lines; nil means JSON to stdout at Info.
	Logger *slog.Logger
	// OnEvent, when set, is called with each job's start and outcome (see Event), on the goroutine
	// that ran the job, before the batch reports: keep it quick and safe for concurrent calls.
	// event.Write writes them as JSON lines (JOBKIT_EVENTS=stdout).
	OnEvent func(event.Event)
	// Metrics receives a CloudWatch Embedded Metric Format line per job kind of a batch (and per
	// 100 of its records); nil means stdout. ConfigFromEnv sends them to a CloudWatch agent
	// when JOBKIT_METRICS_ENDPOINT names one (a container's sidecar). Use io.Discard to turn
	// metrics off.
	Metrics io.Writer
	// SQS is the client for visibility changes and dead-letter sends (required).
	SQS SQSAPI
	// MaxReceiveCount is the queue's redrive policy maxReceiveCount (JOBKIT_MAX_RECEIVE_COUNT,
	// set by the Worker and ContainerWorker constructs); 0 means unknown. When set, a record on
	// its MaxReceiveCount-th receive — which SQS's redrive policy would move to the DLQ on the
	// next, with no reason and no job state, if this delivery ended without an outcome — is not
	// run: the runtime dead-letters it (ReasonReceiveLimit), so every job SQS would move ends as
	// a job. It must exceed MaxAttempts; on a FIFO queue be at least
	// contract.MinFIFOMaxReceiveCount(batch size, MaxAttempts).
	MaxReceiveCount int
	// Deliveries, when set, remembers the deliveries of a message that did not run its job (a
	// FIFO record skipped behind a failed one, a record not started before the deadline), so
	// JobRow.Attempt counts real runs: a job gets MaxAttempts runs, and its backoff is sized by
	// them. idempotency.DynamoDBStore implements it in the idempotency table. When nil, Attempt is
	// ApproximateReceiveCount: deliveries that did not run count too, so a job can get fewer
	// than MaxAttempts runs — but it is never dead-lettered for its attempts without running.
	Deliveries DeliveryLedger
	// States, when set, records the outcome of failed attempts in the job state table: retrying
	// (with the next attempt's time and the error), dead or cancelled. A dead job is recorded (and
	// counted in its fan-out batch) before its dead-letter send; if that fails the record is
	// reported failed, as when the send fails. Running and succeeded are recorded by middleware
	// (jobs/state.Middleware, folded into idempotency records where it can). nil records nothing.
	States StateStore
	// S3 reads (and, after success, deletes) the payloads of claim-checked jobs, whose message
	// body is a pointer (see Payloads). nil: such a job is dead-lettered as
	// ReasonPayloadUnavailable. ConfigFromEnv sets it.
	S3 PayloadS3API
	// PayloadBucket, when set, is the only bucket payloads are read from: a pointer to another is
	// dead-lettered as ReasonPayloadUnavailable. From JOBKIT_PAYLOAD_BUCKET.
	PayloadBucket string
	// MaxPayloadSize is the largest claim-checked payload the runtime reads, in bytes (it holds
	// it in memory): an object declaring more, or yielding more, is dead-lettered as
	// ReasonPayloadUnavailable without being read further. Default defaultMaxPayloadSize; from
	// JOBKIT_MAX_PAYLOAD_SIZE.
	MaxPayloadSize int64
}

// DeliveryLedger counts, per SQS message id, the deliveries that did not run the job, and the
// runs the runtime began on a redelivery that have not reported an outcome.
//
// The runtime adds a delivery that did not run after each such delivery and, on a message's
// later delivery (receive count above 1), subtracts the count from ApproximateReceiveCount to get
// the attempt. A failed call is logged and the receive count is used as it is: the job is
// charged, never run more often.
//
// A start is added before each run on a redelivery (a first delivery writes nothing) and taken
// back once the run reports and its message goes back to the queue. A run that died — the process
// crashed or was killed, the invocation timed out — leaves its mark, which a receive that never
// reached the runtime (a throttled invocation) does not. So the runtime runs a job whose run died
// alone, after the rest of its batch, so that a crash loop takes no other job down with it, and
// dead-letters it once its runs have died MaxAttempts times (ReasonNoOutcome).
// idempotency.DynamoDBStore implements it.
type DeliveryLedger interface {
	// AddDeliveries adds notRun and started (either may be negative) to the message's counts.
	AddDeliveries(ctx context.Context, messageID string, notRun, started int) error
	// Deliveries returns the message's counts, in one read.
	Deliveries(ctx context.Context, messageID string) (notRun, started int, err error)
}

// ConfigFromEnv reads a Config from the environment the infra Worker construct sets:
//
//	JOBKIT_QUEUE_URL           the queue the function consumes (required)
//	JOBKIT_DLQ_URL             its dead-letter queue (required)
//	JOBKIT_MAX_ATTEMPTS        deliveries before dead-lettering; default 5
//	JOBKIT_VISIBILITY_TIMEOUT  the queue's visibility timeout: seconds ("30") or a Go duration; default 30s
//	JOBKIT_CONCURRENCY         records (FIFO: groups) run at once in a batch; default 10
//	JOBKIT_MAX_RECEIVE_COUNT   the queue's redrive maxReceiveCount (Config.MaxReceiveCount); default unknown
//	JOBKIT_BACKOFF_BASE        first retry delay ceiling: a Go duration ("1s") or seconds; default 1s
//	JOBKIT_BACKOFF_CAP         largest retry delay: a Go duration or seconds; default 15m, at most 12h
//	JOBKIT_SAFETY_MARGIN       time kept before the Lambda deadline; default 2s
//	JOBKIT_JOB_TIMEOUT         each job's own time limit; default none
//	JOBKIT_PAYLOAD_BUCKET      the bucket of claim-checked payloads (Config.PayloadBucket); default any
//	JOBKIT_MAX_PAYLOAD_SIZE    the largest claim-checked payload read, bytes; default 64 MiB
//	JOBKIT_EVENTS              "stdout": each job's start and outcome as JSON lines (event.Write); default none
//	JOBKIT_METRICS_ENDPOINT    tcp:// or udp://host:port of a CloudWatch agent for the EMF lines; default stdout
//	JOBKIT_METRICS_LOG_GROUP   the agent's log group for them (_aws.LogGroupName); default the agent's
//	AWS_LAMBDA_FUNCTION_NAME   set by Lambda; written on dead-lettered messages
//	AWS_LAMBDA_LOG_LEVEL       set by Lambda's JSON logging controls; the log level, default INFO
//
// It also makes the SQS and S3 clients from the default AWS configuration (which honours
// AWS_ENDPOINT_URL; S3 then uses path-style addresses), a JSON logger on stdout and stdout (or
// the agent) for metrics.
func ConfigFromEnv() (Config, error) {
	cfg, err := configFromLookup(os.LookupEnv)
	if err != nil {
		return cfg, err
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return cfg, fmt.Errorf("jobs: load AWS config: %w", err)
	}
	cfg.SQS = sqs.NewFromConfig(awsCfg)
	cfg.S3 = NewPayloadS3Client(awsCfg)
	return cfg, nil
}

// configFromLookup is ConfigFromEnv without the AWS client.
func configFromLookup(lookup func(string) (string, bool)) (Config, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	cfg := Config{
		QueueURL:      get(contract.EnvQueueURL),
		DLQURL:        get(contract.EnvDLQURL),
		FunctionName:  get(contract.EnvFunctionName),
		PayloadBucket: get(contract.EnvPayloadBucket),
		Metrics:       os.Stdout,
	}
	var errs []error
	integer := func(name string, def int, dst *int) {
		*dst = def
		if v := get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
				return
			}
			*dst = n
		}
	}
	duration := func(name string, def time.Duration, dst *time.Duration) {
		*dst = def
		if v := get(name); v != "" {
			d, err := parseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a Go duration (\"30s\") or whole seconds", name, v))
				return
			}
			*dst = d
		}
	}
	integer(contract.EnvMaxAttempts, contract.DefaultMaxAttempts, &cfg.MaxAttempts)
	integer(contract.EnvConcurrency, contract.DefaultConcurrency, &cfg.Concurrency)
	integer(contract.EnvMaxReceiveCount, 0, &cfg.MaxReceiveCount)
	var maxPayload int
	integer(contract.EnvMaxPayloadSize, defaultMaxPayloadSize, &maxPayload)
	cfg.MaxPayloadSize = int64(maxPayload)
	duration(contract.EnvVisibilityTimeout, contract.DefaultVisibilityTimeout, &cfg.VisibilityTimeout)
	duration(contract.EnvBackoffBase, contract.DefaultBackoffBase, &cfg.BackoffBase)
	duration(contract.EnvBackoffCap, contract.DefaultBackoffCap, &cfg.BackoffCap)
	duration(contract.EnvSafetyMargin, defaultSafetyMargin, &cfg.SafetyMargin)
	duration(contract.EnvJobTimeout, 0, &cfg.JobTimeout)

	level := slog.LevelInfo
	if v := get(contract.EnvLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want DEBUG, INFO, WARN or ERROR", contract.EnvLogLevel, v))
		}
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
	if v := get(contract.EnvMetricsEndpoint); v != "" {
		w, err := newAgentWriter(v, get(contract.EnvMetricsLogGroup), cfg.Logger)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%w", contract.EnvMetricsEndpoint, err))
		} else {
			cfg.Metrics = w
		}
	}
	switch v := get(contract.EnvEvents); v {
	case "":
	case "stdout":
		cfg.OnEvent = event.Write(os.Stdout)
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want stdout or nothing", contract.EnvEvents, v))
	}
	if cfg.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set", contract.EnvQueueURL))
	}
	if cfg.DLQURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set", contract.EnvDLQURL))
	}
	if len(errs) > 0 {
		return cfg, fmt.Errorf("jobs: config from environment: %w", errors.Join(errs...))
	}
	return cfg, nil
}

// parseDuration reads a Go duration ("1m30s") or a number of seconds ("90").
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n > int64(MaxVisibility/time.Second)*2 {
			return 0, fmt.Errorf("%d seconds is too long", n)
		}
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(v)
}

// Validate reports what is missing or out of range; NewLambdaHandler panics on such a Config.
func (c *Config) Validate() error {
	var errs []error
	if c.QueueURL == "" {
		errs = append(errs, errors.New("QueueURL is empty"))
	}
	if c.DLQURL == "" {
		errs = append(errs, errors.New("DLQURL is empty"))
	}
	if c.SQS == nil {
		errs = append(errs, errors.New("SQS is nil"))
	}
	if c.MaxAttempts < 0 || c.Concurrency < 0 || c.VisibilityTimeout < 0 || c.BackoffBase < 0 ||
		c.BackoffCap < 0 || c.SafetyMargin < 0 || c.JobTimeout < 0 || c.MaxReceiveCount < 0 {
		errs = append(errs, errors.New("negative value"))
	}
	if attempts := max(c.MaxAttempts, 0); c.MaxReceiveCount > 0 {
		attempts = cmp.Or(attempts, contract.DefaultMaxAttempts)
		if c.MaxReceiveCount <= attempts {
			errs = append(errs, fmt.Errorf("MaxReceiveCount %d must exceed MaxAttempts %d: the last receive the redrive policy allows is kept for dead-lettering, never a run", c.MaxReceiveCount, attempts))
		}
	}
	if c.VisibilityTimeout > MaxVisibility {
		errs = append(errs, fmt.Errorf("VisibilityTimeout %s is above SQS's 12h", c.VisibilityTimeout))
	}
	if len(errs) > 0 {
		return fmt.Errorf("jobs: invalid Config: %w", errors.Join(errs...))
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	c.MaxAttempts = cmp.Or(c.MaxAttempts, contract.DefaultMaxAttempts)
	c.VisibilityTimeout = cmp.Or(c.VisibilityTimeout, contract.DefaultVisibilityTimeout)
	c.Concurrency = cmp.Or(c.Concurrency, contract.DefaultConcurrency)
	c.BackoffBase = cmp.Or(c.BackoffBase, contract.DefaultBackoffBase)
	c.BackoffCap = cmp.Or(c.BackoffCap, contract.DefaultBackoffCap)
	if c.BackoffCap > MaxVisibility {
		c.BackoffCap = MaxVisibility
	}
	c.SafetyMargin = cmp.Or(c.SafetyMargin, defaultSafetyMargin)
	if c.MaxPayloadSize <= 0 {
		c.MaxPayloadSize = defaultMaxPayloadSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	if c.Metrics == nil {
		c.Metrics = os.Stdout
	}
	if c.Backoff == nil {
		base, ceiling := c.BackoffBase, c.BackoffCap
		c.Backoff = ExponentialBackoff(base, ceiling)
	}
	return c
}

// ExponentialBackoff returns a BackoffFunc with full jitter: uniform in
// [0, min(ceiling, base·2^(attempt-1))], ceiling at most 12 h. It is the runtime's default.
//
// SQS takes visibility timeouts in whole seconds, so once the range reaches a second the delay is
// drawn uniformly from the whole seconds in it (0 included): rounding a continuous draw up would
// add half a second on average and never retry at once.
func ExponentialBackoff(base, ceiling time.Duration) BackoffFunc {
	if ceiling > MaxVisibility || ceiling <= 0 {
		ceiling = MaxVisibility
	}
	return func(attempt int) time.Duration {
		limit := jitterCeiling(base, ceiling, attempt)
		if limit < time.Second {
			return fullJitter(limit, limit, 1)
		}
		return time.Duration(rand.Int64N(int64(limit/time.Second)+1)) * time.Second
	}
}

// jitterCeiling is min(ceiling, base·2^(attempt-1)).
func jitterCeiling(base, ceiling time.Duration, attempt int) time.Duration {
	if base <= 0 || ceiling <= 0 {
		return 0
	}
	limit := base
	for n := 1; n < attempt && limit < ceiling; n++ {
		limit *= 2
	}
	if limit > ceiling || limit <= 0 {
		limit = ceiling
	}
	return limit
}
