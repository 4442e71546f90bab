package jobs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The redrive recorder. The runtime dead-letters a job itself before SQS's redrive policy could
// (receives.go), but a function that never reaches the runtime — it fails at init, its code or
// role is broken, or its invocation is throttled on a message's last receive — cannot. For those,
// the infra JobQueue construct points the queue's redrive policy at a holding queue instead of
// the dead-letter queue, and the Worker and ContainerWorker constructs add a small function built
// from jobkit's own code (cmd/jobkit-recorder) on it: the RedriveRecorder. For each message SQS
// moved there it records the job dead (ReasonRedrivePolicy) through the same StateStore the
// runtime uses when it dead-letters — a fan-out batch member is counted dead, and its batch
// completes and sends its failure callback — and then sends the message on to the dead-letter
// queue with the jobkit.* attributes the runtime's own dead letters carry, naming the job queue
// as the source queue (where a redrive sends it back). The holding queue has its own redrive
// policy to the dead-letter queue: a recorder that fails too still ends every message there,
// unrecorded, as SQS moved it.

// RecorderConfig configures a RedriveRecorder. RecorderConfigFromEnv reads it from the environment
// the infra constructs give the recorder function.
type RecorderConfig struct {
	// QueueURL is the job queue whose redrive policy moves messages into the holding queue the
	// recorder consumes: its dead letters name it as their source queue (AttrSourceQueue), where
	// a redrive sends them back. Required.
	QueueURL string
	// DLQURL is the job queue's dead-letter queue, where the recorder sends the messages. Required.
	DLQURL string
	// MaxReceiveCount is the job queue's redrive maxReceiveCount, named in the error; 0: unknown.
	MaxReceiveCount int
	// FunctionName names the worker that never answered (AttrFunction); optional.
	FunctionName string
	// States, when set, records each job dead (ReasonRedrivePolicy) before its send, and counts a
	// fan-out batch member dead (jobs/state.Table, as the worker's Config.States).
	States StateStore
	// SQS sends to the dead-letter queue. Required.
	SQS SQSAPI
	// S3 and PayloadBucket read the envelope of a claim-checked job (a pointer body) to know which
	// job it is. Without S3, such a job is sent on without a state recorded.
	S3            PayloadS3API
	PayloadBucket string
	// Logger receives a line per message; nil means JSON to stdout at Info.
	Logger *slog.Logger
}

// RecorderConfigFromEnv reads a RecorderConfig from lookup (os.LookupEnv): JOBKIT_QUEUE_URL and
// JOBKIT_DLQ_URL (required), JOBKIT_MAX_RECEIVE_COUNT, JOBKIT_WORKER_NAME (the worker's function),
// JOBKIT_PAYLOAD_BUCKET and AWS_LAMBDA_LOG_LEVEL. The clients and States are the caller's: the
// recorder's main (cmd/jobkit-recorder) makes them, with jobs/state on JOBKIT_STATE_TABLE.
func RecorderConfigFromEnv(lookup func(string) (string, bool)) (RecorderConfig, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	cfg := RecorderConfig{
		QueueURL: get(contract.EnvQueueURL), DLQURL: get(contract.EnvDLQURL), FunctionName: get(contract.EnvWorkerName), PayloadBucket: get(contract.EnvPayloadBucket),
	}
	var errs []error
	if cfg.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set", contract.EnvQueueURL))
	}
	if cfg.DLQURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set", contract.EnvDLQURL))
	}
	if v := get(contract.EnvMaxReceiveCount); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", contract.EnvMaxReceiveCount, v))
		}
		cfg.MaxReceiveCount = n
	}
	level := slog.LevelInfo
	if v := get(contract.EnvLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want DEBUG, INFO, WARN or ERROR", contract.EnvLogLevel, v))
		}
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
	if len(errs) > 0 {
		return cfg, fmt.Errorf("jobs: recorder config from environment: %w", errors.Join(errs...))
	}
	return cfg, nil
}

// redrivePolicyError is the error a job is recorded dead with when the queue's redrive policy
// moved it (ReasonRedrivePolicy).
type redrivePolicyError struct {
	MaxReceiveCount int // the job queue's maxReceiveCount; 0: unknown
}

// Error describes the failure.
func (e *redrivePolicyError) Error() string {
	n := "the queue's maxReceiveCount"
	if e.MaxReceiveCount > 0 {
		n = strconv.Itoa(e.MaxReceiveCount)
	}
	return "jobs: received " + n + " times with no outcome reported: moved by the queue's redrive policy " +
		"(the function did not reach its handler: it failed at init, or its invocations were throttled or killed)"
}

// DeadLetterReason returns ReasonRedrivePolicy.
func (e *redrivePolicyError) DeadLetterReason() string { return contract.ReasonRedrivePolicy }

// RedriveRecorder records the jobs a queue's redrive policy moved into its holding queue and sends
// them on to the dead-letter queue (see the top of this file). Its Handle is the Lambda handler of
// an SQS event source mapping on the holding queue with ReportBatchItemFailures.
type RedriveRecorder struct {
	cfg  RecorderConfig
	log  *slog.Logger
	fifo bool
}

// NewRedriveRecorder returns the recorder of cfg. It panics when QueueURL, DLQURL or SQS is unset.
func NewRedriveRecorder(cfg RecorderConfig) *RedriveRecorder {
	if cfg.QueueURL == "" || cfg.DLQURL == "" || cfg.SQS == nil {
		panic("jobs: NewRedriveRecorder: QueueURL, DLQURL and SQS are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	return &RedriveRecorder{cfg: cfg, log: log, fifo: awsarn.IsFIFO(cfg.DLQURL)}
}

// Handle records each message of the batch, in order: the job's state first (a repeat changes
// nothing: a batch member is counted once), then the send to the dead-letter queue. A message
// whose state or send failed is reported in batchItemFailures and comes back to be recorded again;
// on a FIFO queue, so do the messages after it (a message group stays in order). A body that is
// not a job envelope is sent on all the same, with no state to record.
func (r *RedriveRecorder) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	failed := false
	for i := range ev.Records {
		m := &ev.Records[i]
		if (failed && r.fifo) || ctx.Err() != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		if err := r.record(ctx, m); err != nil {
			failed = true
			r.log.LogAttrs(ctx, slog.LevelError, "redrive recorder: job not recorded: reported failed, to be recorded on its next delivery",
				slog.String("message_id", m.MessageId), LogString("error", err.Error()))
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// record records one moved message's job dead and sends the message to the dead-letter queue.
func (r *RedriveRecorder) record(ctx context.Context, m *events.SQSMessage) error {
	env, err := r.envelope(ctx, m)
	if err != nil {
		return err
	}
	row := &JobRow{
		ID: env.ID, Kind: env.Kind, Key: env.Key, Batch: env.Batch, Trace: env.Trace, QueueURL: r.cfg.QueueURL,
		MessageID: m.MessageId, GroupID: m.Attributes["MessageGroupId"],
	}
	row.Deliveries, _ = strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	jobErr := &redrivePolicyError{MaxReceiveCount: r.cfg.MaxReceiveCount}
	if r.cfg.States != nil && row.ID != "" {
		now := time.Now().UTC()
		st := JobStatus{
			ID: row.ID, Kind: row.Kind, State: StateDead, Queue: row.QueueURL, Batch: row.Batch, Since: now, FinishedAt: now,
			Reason: contract.ReasonRedrivePolicy, LastError: truncateUTF8(errString(jobErr), maxStateError),
		}
		if err := r.cfg.States.JobSettled(ctx, row, st); err != nil {
			return fmt.Errorf("record the job's state: %w", err)
		}
	}
	if err := r.send(ctx, m, row, jobErr); err != nil {
		return fmt.Errorf("send to the dead-letter queue: %w", err)
	}
	attrs := []slog.Attr{LogString("job_id", row.ID), LogString("kind", row.Kind), slog.Int("attempt", 0),
		slog.String("message_id", m.MessageId), slog.String("reason", contract.ReasonRedrivePolicy), LogString("error", jobErr.Error())}
	if row.GroupID != "" {
		attrs = append(attrs, LogString("group_id", row.GroupID))
	}
	r.log.LogAttrs(ctx, slog.LevelError, "job dead-lettered", attrs...)
	return nil
}

// envelope reads the job of a moved message, tolerantly: as much of an envelope as the body (or,
// for a claim check, its S3 object) holds; nothing for a body that is not one. The error is a
// transient failure to read a claim-checked envelope (retried); a permanent one is logged and the
// message goes on without its job.
func (r *RedriveRecorder) envelope(ctx context.Context, m *events.SQSMessage) (Envelope, error) {
	body := m.Body
	if ptr, ok := ParsePayloadPointer(body); ok {
		if r.cfg.S3 == nil {
			return Envelope{}, nil
		}
		fetched, err := fetchPayload(ctx, r.cfg.S3, r.cfg.PayloadBucket, r.cfg.QueueURL, defaultMaxPayloadSize, ptr)
		var pe *PayloadError
		if errors.As(err, &pe) && pe.Permanent {
			r.log.LogAttrs(ctx, slog.LevelWarn, "redrive recorder: the claim-checked envelope cannot be read: sent on without its job's state",
				slog.String("message_id", m.MessageId), LogString("error", err.Error()))
			return Envelope{}, nil
		}
		if err != nil {
			return Envelope{}, err
		}
		body = fetched
	}
	var env Envelope
	if json.Unmarshal([]byte(body), &env) != nil && env.ID == "" {
		return Envelope{}, nil
	}
	return env, nil
}

// send sends the moved message to the dead-letter queue as the runtime's own dead letters are:
// the body, its own message attributes but jobkit's (a native redrive carries an earlier dead
// letter's over), the jobkit.* attributes of this dead-lettering and its trace header. On a FIFO
// queue it keeps its message group, and its deduplication id is its message id — SQS keeps a
// message's id when its redrive policy moves it, so a forward repeated after a lost answer is
// dropped, as is one of a message the runtime dead-lettered just before (the runtime's dead
// letters use the same id).
func (r *RedriveRecorder) send(ctx context.Context, m *events.SQSMessage, row *JobRow, jobErr error) error {
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(r.cfg.DLQURL),
		MessageBody:       aws.String(m.Body),
		MessageAttributes: r.attributes(m, row, jobErr),
	}
	if trace := m.Attributes["AWSTraceHeader"]; trace != "" {
		in.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
			string(sqstypes.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	if r.fifo {
		group := row.GroupID
		group = cmp.Or(group, "jobkit")
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(dedupID(m.MessageId))
	}
	_, err := r.cfg.SQS.SendMessage(ctx, in)
	return err
}

// maxMessageAttributes is the most message attributes SQS takes on a message.
const maxMessageAttributes = 10

// attributes returns the dead letter's message attributes: the message's own, but jobkit's, and
// as many of this dead-lettering's jobkit.* attributes as SQS's limits of 10 attributes and 1 MiB
// leave room for — the reason last to go, as deadLetterAttributes sheds them.
func (r *RedriveRecorder) attributes(m *events.SQSMessage, row *JobRow, jobErr error) map[string]sqstypes.MessageAttributeValue {
	out := map[string]sqstypes.MessageAttributeValue{}
	size := len(m.Body)
	for k, v := range m.MessageAttributes {
		if strings.HasPrefix(k, contract.AttrPrefix) || (v.StringValue == nil && v.BinaryValue == nil) {
			continue
		}
		out[k] = sqstypes.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		size += len(k) + len(v.DataType) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	list := []dlqAttr{
		{name: contract.AttrError, value: errString(jobErr), cut: true},
		{name: contract.AttrSourceQueue, value: r.cfg.QueueURL},
		{name: contract.AttrFunction, value: r.cfg.FunctionName},
		{name: contract.AttrFailedAt, value: time.Now().UTC().Format(time.RFC3339Nano)},
		{name: contract.AttrSourceMessageID, value: m.MessageId},
		{name: contract.AttrJobID, value: row.ID},
		{name: contract.AttrKind, value: row.Kind},
		{name: contract.AttrReason, value: contract.ReasonRedrivePolicy},
	}
	room := maxMessageAttributes - len(out)
	n := 0
	for _, a := range list {
		if a.value != "" {
			n++
		}
	}
	for i := 0; i < len(list) && n > room; i++ {
		if list[i].value != "" {
			list[i].value, n = "", n-1
		}
	}
	jk, _ := deadLetterAttributes(size, list)
	for k, v := range jk {
		out[k] = v
	}
	return out
}
