package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// Environment variables DelayerConfigFromEnv reads (set by the infra DelayedJobs construct on the
// producers it grants).
const (
	EnvScheduleGroup    = "JOBKIT_SCHEDULE_GROUP"     // the schedule group of one-time schedules
	EnvSchedulerRoleARN = "JOBKIT_SCHEDULER_ROLE_ARN" // the role Scheduler assumes to send to the queues
	EnvScheduleDLQARN   = "JOBKIT_SCHEDULE_DLQ_ARN"   // where undeliverable delayed jobs go (optional)
	EnvScheduleRetries  = "JOBKIT_SCHEDULE_RETRIES"   // delivery retries, 0-185 (optional)
	EnvScheduleMaxAge   = "JOBKIT_SCHEDULE_MAX_AGE"   // how long delivery is retried, Go duration (optional)
	EnvDelayQueues      = "JOBKIT_DELAY_QUEUES"       // the queue ARNs the role may send to, comma-separated (optional)
)

// ErrNotADelayQueue: the job's queue is not among DelayerConfig.Queues, the queues the delayed
// jobs' role may send to (a FIFO queue without content-based deduplication never is: the
// DelayedJobs construct refuses it, as Scheduler sends no deduplication id).
var ErrNotADelayQueue = errors.New("scheduler: not a queue of the delayed jobs")

// SchedulerAPI is the part of the EventBridge Scheduler client that Delayer uses.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var (
	_ SchedulerAPI     = (*scheduler.Client)(nil)
	_ jobs.LongDelayer = (*Delayer)(nil)
)

// DelayerConfig configures a Delayer.
type DelayerConfig struct {
	// Group is the schedule group the one-time schedules are created in; "" is "default".
	Group string
	// RoleARN is the IAM role EventBridge Scheduler assumes to send to the queues (required).
	RoleARN string
	// DeadLetterARN is the SQS queue ARN a job goes to when it cannot be delivered; "" for none.
	DeadLetterARN string
	// Retry is the delivery retry policy; nil means Scheduler's defaults (185 retries over 24 h).
	Retry *RetryPolicy
	// Queues, when set, are the ARNs of the only queues the role may send to (DelayedJobs.Queues):
	// a job for another queue is refused before any call, where EventBridge Scheduler would take
	// the schedule and fail to deliver it when it fires.
	Queues []string
	// Region is used to build queue ARNs from URLs whose host names no region (an emulator's
	// http://127.0.0.1:4566/...); "" means the client's region when it has one.
	Region string
}

// DelayerConfigFromEnv reads a DelayerConfig from the JOBKIT_SCHEDULE* environment variables.
func DelayerConfigFromEnv() (DelayerConfig, error) {
	cfg := DelayerConfig{
		Group:         os.Getenv(EnvScheduleGroup),
		RoleARN:       os.Getenv(EnvSchedulerRoleARN),
		DeadLetterARN: os.Getenv(EnvScheduleDLQARN),
	}
	for arn := range strings.SplitSeq(os.Getenv(EnvDelayQueues), ",") {
		if arn = strings.TrimSpace(arn); arn != "" {
			cfg.Queues = append(cfg.Queues, arn)
		}
	}
	retries, maxAge := os.Getenv(EnvScheduleRetries), os.Getenv(EnvScheduleMaxAge)
	if retries != "" || maxAge != "" {
		cfg.Retry = &RetryPolicy{MaxRetries: DefaultMaxRetries}
		if retries != "" {
			n, err := strconv.Atoi(retries)
			if err != nil {
				return cfg, &ValidationError{Field: EnvScheduleRetries, Reason: fmt.Sprintf("%q is not a whole number", retries), Err: err}
			}
			cfg.Retry.MaxRetries = n
		}
		if maxAge != "" {
			d, err := time.ParseDuration(maxAge)
			if err != nil {
				return cfg, &ValidationError{Field: EnvScheduleMaxAge, Reason: fmt.Sprintf("%q is not a duration", maxAge), Err: err}
			}
			cfg.Retry.MaxEventAge = d
		}
	}
	return cfg, cfg.validate()
}

func (c DelayerConfig) validate() error {
	if !strings.HasPrefix(c.RoleARN, "arn:") || !strings.Contains(c.RoleARN, ":iam::") {
		return &ValidationError{Field: "RoleARN", Reason: fmt.Sprintf("%q is not an IAM role ARN", c.RoleARN)}
	}
	if c.Group != "" && !validGroup.MatchString(c.Group) {
		return &ValidationError{Field: "Group", Reason: fmt.Sprintf("%q must be 1-64 letters, digits, '-', '_' or '.'", c.Group)}
	}
	if c.DeadLetterARN != "" {
		if _, _, err := queueFromARN(c.DeadLetterARN); err != nil {
			return &ValidationError{Field: "DeadLetterARN", Reason: "not an SQS queue ARN", Err: err}
		}
		if strings.HasSuffix(c.DeadLetterARN, ".fifo") {
			return &ValidationError{Field: "DeadLetterARN", Reason: "EventBridge Scheduler needs a Standard queue as dead-letter queue, not a FIFO one"}
		}
	}
	if c.Retry != nil {
		return c.Retry.validate("")
	}
	return nil
}

var validGroup = regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)

// Delayer is the jobs.LongDelayer of EventBridge Scheduler: each job delayed beyond
// jobs.MaxSQSDelay becomes a one-time at() schedule in UTC, in the configured group, whose target
// sends the job's envelope to its queue and which deletes itself after it has run
// (ActionAfterCompletion DELETE). The schedule is named after the job id (ScheduleNameForJob), so
// CancelJob(id) finds it. Pass it as jobs.ClientOptions.LongDelayer.
type Delayer struct {
	api SchedulerAPI
	cfg DelayerConfig
}

// NewDelayer returns a Delayer creating schedules through api (a *scheduler.Client, usually).
// The error is a *ValidationError for a bad configuration.
func NewDelayer(api SchedulerAPI, cfg DelayerConfig) (*Delayer, error) {
	if api == nil {
		return nil, errors.New("scheduler: NewDelayer: nil Scheduler client")
	}
	if cfg.Region == "" {
		if c, ok := api.(interface{ Options() scheduler.Options }); ok {
			cfg.Region = c.Options().Region
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Delayer{api: api, cfg: cfg}, nil
}

// Group returns the schedule group the Delayer uses ("default" when none was configured).
func (d *Delayer) Group() string {
	if d.cfg.Group == "" {
		return "default"
	}
	return d.cfg.Group
}

// CreateScheduleInput returns the request ScheduleJob sends for job, without sending it.
func (d *Delayer) CreateScheduleInput(job jobs.PreparedJob) (*scheduler.CreateScheduleInput, error) {
	bad := func(field, reason string, err error) (*scheduler.CreateScheduleInput, error) {
		return nil, &ValidationError{Schedule: job.ID, Field: "PreparedJob." + field, Reason: reason, Err: err}
	}
	switch {
	case job.ID == "":
		return bad("ID", "empty job id", nil)
	case job.Body == "":
		return bad("Body", "empty envelope", nil)
	case job.DeliverAt.IsZero():
		return bad("DeliverAt", "no delivery time", nil)
	}
	arn, err := QueueARN(job.QueueURL, d.cfg.Region)
	if err != nil {
		return bad("QueueURL", "no queue ARN", err)
	}
	if len(d.cfg.Queues) > 0 && !slices.Contains(d.cfg.Queues, arn) {
		return bad("QueueURL", fmt.Sprintf("queue %s is not one the delayed jobs' role may send to (DelayedJobs queues: %s): "+
			"Scheduler would take the schedule and fail to deliver it", awsarn.QueueName(arn), strings.Join(d.cfg.Queues, ", ")), ErrNotADelayQueue)
	}
	fifo := awsarn.IsFIFO(job.QueueURL)
	if fifo && job.GroupID == "" {
		return bad("GroupID", "a FIFO queue needs a message group id", nil)
	}
	// Whole seconds, rounded up: never deliver early.
	at := job.DeliverAt.UTC().Add(time.Second - 1).Truncate(time.Second)
	target := &types.Target{
		Arn:     aws.String(arn),
		RoleArn: aws.String(d.cfg.RoleARN),
		Input:   aws.String(job.Body),
	}
	if fifo {
		target.SqsParameters = &types.SqsParameters{MessageGroupId: aws.String(job.GroupID)}
	}
	if d.cfg.DeadLetterARN != "" {
		target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(d.cfg.DeadLetterARN)}
	}
	if r := d.cfg.Retry; r != nil {
		target.RetryPolicy = &types.RetryPolicy{
			MaximumRetryAttempts:     aws.Int32(int32(r.MaxRetries)),
			MaximumEventAgeInSeconds: aws.Int32(int32(r.EventAge() / time.Second)),
		}
	}
	desc := "jobkit delayed job " + job.Kind + " " + job.ID
	if len(desc) > maxDescriptionLen {
		desc = desc[:maxDescriptionLen]
	}
	in := &scheduler.CreateScheduleInput{
		Name:                       aws.String(ScheduleNameForJob(job.ID)),
		ScheduleExpression:         aws.String("at(" + at.Format(AtLayout) + ")"),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      types.ActionAfterCompletionDelete,
		Target:                     target,
		Description:                aws.String(desc),
	}
	if d.cfg.Group != "" {
		in.GroupName = aws.String(d.cfg.Group)
	}
	return in, nil
}

// ScheduleJob creates the one-time schedule that delivers job at job.DeliverAt. A schedule that already
// exists for the same job id is success: the job is already scheduled (a retried Enqueue must not
// fail, and the first schedule wins).
func (d *Delayer) ScheduleJob(ctx context.Context, job jobs.PreparedJob) error {
	in, err := d.CreateScheduleInput(job)
	if err != nil {
		return err
	}
	if _, err := d.api.CreateSchedule(ctx, in); err != nil {
		var conflict *types.ConflictException
		if errors.As(err, &conflict) {
			return nil
		}
		return fmt.Errorf("scheduler: create schedule %s/%s for job %q: %w", d.Group(), aws.ToString(in.Name), job.ID, err)
	}
	return nil
}

// CancelJob deletes the schedule of job id. When there is none — the job was delivered already
// (its schedule deleted itself), cancelled before, or never delayed past jobs.MaxSQSDelay — it
// returns a *NotFoundError, which matches ErrNotFound: a caller that must know whether the job
// will still run can tell "cancelled" from "too late".
func (d *Delayer) CancelJob(ctx context.Context, id string) error {
	name := ScheduleNameForJob(id)
	in := &scheduler.DeleteScheduleInput{Name: aws.String(name)}
	if d.cfg.Group != "" {
		in.GroupName = aws.String(d.cfg.Group)
	}
	if _, err := d.api.DeleteSchedule(ctx, in); err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			return &NotFoundError{JobID: id, Schedule: name, Group: d.Group(), Err: err}
		}
		return fmt.Errorf("scheduler: delete schedule %s/%s of job %q: %w", d.Group(), name, id, err)
	}
	return nil
}

// JobSchedulePrefix starts the name of every schedule a Delayer creates.
const JobSchedulePrefix = "job-"

var unsafeNameChars = regexp.MustCompile(`[^0-9a-zA-Z_.-]`)

// ScheduleNameForJob returns the name of the one-time schedule of job id: "job-<id>" when the id
// is made of characters a schedule name allows and fits, else "job-<sanitized prefix>-<hash>"
// with 16 hex digits of the id's SHA-256, so that distinct ids keep distinct names. It is
// deterministic: CancelJob finds the schedule by the id alone.
func ScheduleNameForJob(id string) string {
	name := JobSchedulePrefix + id
	if len(name) <= maxNameLen && !unsafeNameChars.MatchString(id) && id != "" {
		return name
	}
	sum := sha256.Sum256([]byte(id))
	hash := hex.EncodeToString(sum[:8])
	keep := unsafeNameChars.ReplaceAllString(id, "-")
	if room := maxNameLen - len(JobSchedulePrefix) - 1 - len(hash); len(keep) > room {
		keep = keep[:room]
	}
	if keep == "" {
		return JobSchedulePrefix + hash
	}
	return JobSchedulePrefix + keep + "-" + hash
}
