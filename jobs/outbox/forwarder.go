package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// SQSAPI is the SQS call a Forwarder makes (a *sqs.Client).
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// DynamoDBAPI is the DynamoDB call a Forwarder makes (a *dynamodb.Client).
type DynamoDBAPI interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// ForwarderConfig configures a Forwarder.
type ForwarderConfig struct {
	SQS      SQSAPI
	DynamoDB DynamoDBAPI
	// Table is the state table whose stream feeds the forwarder (where it deletes sent items).
	Table string
	// Queues, when set, are the only queue URLs the forwarder sends to (the OutboxForwarder
	// construct passes the queues it grants, in JOBKIT_OUTBOX_QUEUES): an item naming another
	// is skipped, as one SQS refuses for good is.
	Queues []string
	// Metrics receives an embedded-metric line (OutboxItemsSkipped, namespace Jobkit) for each
	// batch that skipped items; default stdout, io.Discard for none.
	Metrics io.Writer
	// Logger receives a line per failure; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Tracer, when set, starts a span per item sent (jobs/jobotel.NewTracer: OpenTelemetry), a
	// child of the trace the job's envelope carries (the span of its Prepare, when the writer's
	// Client has a Tracer); a claim check's pointer carries none, and its span starts a trace.
	Tracer jobs.EnqueueTracer
}

// Forwarder sends the outbox items of a DynamoDB stream batch as SQS messages and deletes them.
// Run it as a Lambda function on the state table's stream (new images) with
// ReportBatchItemFailures: lambda.Start(fw.Handle) (see the Forwarder example).
//
// Items go in stream order, up to 10 (and 1 MiB) a SendMessageBatch call per run of one queue; the
// first item SQS refuses for now (throttling, a service error, a call that fails in transit) is
// reported as the batch item failure and nothing after it is sent, so the event source mapping
// retries from that record (and may send again what a crash had already sent: at least once).
// Sent items are deleted; a delete that fails is logged and left to the item's TTL — the job was
// sent. Records that are not outbox inserts (the business items, the deletes themselves, TTL
// expiries) are skipped.
//
// An item that can never be sent does not hold the shard back: one naming a queue outside
// Queues, one SQS refuses as the sender's fault (SenderFault), one whose call fails for good
// (AccessDenied, a queue that does not exist, an invalid parameter), or a malformed one is
// skipped — logged with its job id and the reason, counted in OutboxItemsSkipped, and left in the
// table for inspection until its TTL — and the items after it are sent.
//
// Order: a stream orders the changes of one item, not of different items, so jobs written in
// separate transactions may be sent in either order, also jobs of one FIFO group. Jobs written in
// one transaction are sent in that transaction's order only if their items share a stream shard.
type Forwarder struct {
	cfg ForwarderConfig
}

// NewForwarder returns a Forwarder for cfg.
func NewForwarder(cfg ForwarderConfig) (*Forwarder, error) {
	if cfg.SQS == nil || cfg.DynamoDB == nil {
		return nil, errors.New("outbox: NewForwarder: SQS and DynamoDB clients are required")
	}
	if cfg.Table == "" {
		return nil, errors.New("outbox: NewForwarder: no Table")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = os.Stdout
	}
	return &Forwarder{cfg: cfg}, nil
}

// item is an outbox item read from a stream record.
type item struct {
	seq, id, queue, body, group, dedup string
	deliverAt                          int64  // epoch ms; 0: at once
	payloadSize                        string // a claim check's ExtendedPayloadSize; "": none
}

// Handle forwards one stream batch and reports the first record it could not send.
func (f *Forwarder) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	var items []item
	skipped := 0
	for _, r := range ev.Records {
		it, ok, err := outboxInsert(r)
		switch {
		case err != nil:
			f.skip(ctx, it, "malformed", err.Error())
			skipped++
		case !ok:
		case !f.allowed(it.queue):
			f.skip(ctx, it, "queue not allowed", "the forwarder sends only to its queues (JOBKIT_OUTBOX_QUEUES)")
			skipped++
		default:
			items = append(items, it)
		}
	}
	sent, refused, failed := f.send(ctx, items)
	skipped += refused
	f.delete(ctx, sent)
	if failed != "" {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: failed})
	}
	if skipped > 0 {
		f.writeSkipped(skipped)
	}
	return resp, nil
}

// outboxInsert reads an outbox item from an INSERT record; ok is false for other records. A
// malformed item comes back with what could be read of it and an error.
func outboxInsert(r events.DynamoDBEventRecord) (it item, ok bool, err error) {
	if r.EventName != string(events.DynamoDBOperationTypeInsert) {
		return it, false, nil
	}
	img := r.Change.NewImage
	id, _ := str(img, AttrID)
	if !strings.HasPrefix(id, KeyPrefix) {
		return it, false, nil
	}
	it = item{seq: r.Change.SequenceNumber, id: strings.TrimPrefix(id, KeyPrefix)}
	var have bool
	if it.queue, have = str(img, AttrQueueURL); !have || it.queue == "" {
		return it, true, fmt.Errorf("%s: no %s", id, AttrQueueURL)
	}
	if it.body, have = str(img, AttrBody); !have || it.body == "" {
		return it, true, fmt.Errorf("%s: no %s", id, AttrBody)
	}
	it.group, _ = str(img, AttrGroupID)
	it.dedup, _ = str(img, AttrDedupID)
	if v, ok := img[AttrPayloadSz]; ok && v.DataType() == events.DataTypeNumber {
		it.payloadSize = v.Number()
	}
	if v, ok := img[AttrDeliverAt]; ok && v.DataType() == events.DataTypeNumber {
		if it.deliverAt, err = strconv.ParseInt(v.Number(), 10, 64); err != nil {
			return it, true, fmt.Errorf("%s: %s: %w", id, AttrDeliverAt, err)
		}
	}
	return it, true, nil
}

func str(img map[string]events.DynamoDBAttributeValue, name string) (string, bool) {
	v, ok := img[name]
	if !ok || v.DataType() != events.DataTypeString {
		return "", false
	}
	return v.String(), true
}

// send sends items in order. It returns the items sent, how many it skipped as never sendable,
// and the sequence number of the first item to retry ("" when none is).
func (f *Forwarder) send(ctx context.Context, items []item) (sent []item, skipped int, failed string) {
	now := f.cfg.Now()
	for start := 0; start < len(items); {
		end, size := start+1, len(items[start].body)
		for end < len(items) && end-start < jobs.MaxBatchEntries && items[end].queue == items[start].queue &&
			size+len(items[end].body) <= jobs.MaxMessageSize {
			size += len(items[end].body)
			end++
		}
		chunk := items[start:end]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(chunk))
		for n, it := range chunk {
			entries[n] = it.entry(strconv.Itoa(n), now)
		}
		endSpans := f.startSpans(ctx, chunk)
		out, err := f.cfg.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(chunk[0].queue), Entries: entries})
		endSpans(out, err)
		if err != nil {
			if code, never := neverSendable(err); never {
				for _, it := range chunk {
					f.skip(ctx, it, code, err.Error())
				}
				skipped += len(chunk)
				start = end
				continue
			}
			f.cfg.Logger.ErrorContext(ctx, "outbox: send failed; the batch is retried from this job", "job_id", chunk[0].id, "queue_url", chunk[0].queue, "error", err.Error())
			return sent, skipped, chunk[0].seq
		}
		refused := map[int]sqstypes.BatchResultErrorEntry{}
		for _, e := range out.Failed {
			if n, err := strconv.Atoi(aws.ToString(e.Id)); err == nil && n < len(chunk) {
				refused[n] = e
			}
		}
		for n, it := range chunk {
			e, no := refused[n]
			switch {
			case !no:
				sent = append(sent, it)
			case e.SenderFault:
				f.skip(ctx, it, aws.ToString(e.Code), aws.ToString(e.Message))
				skipped++
			default:
				f.cfg.Logger.ErrorContext(ctx, "outbox: send refused; the batch is retried from this job", "job_id", it.id, "queue_url", it.queue, "code", aws.ToString(e.Code), "error", aws.ToString(e.Message))
				// The entries after it may have been sent: a retry sends them again (the same
				// job ids; the workers' idempotency has their effect once).
				return sent, skipped, it.seq
			}
		}
		start = end
	}
	return sent, skipped, ""
}

// startSpans starts the Tracer's span for each item of chunk, and returns what ends them with the
// answer of the chunk's SendMessageBatch call (entry ids are the items' indexes); a no-op without
// a Tracer.
func (f *Forwarder) startSpans(ctx context.Context, chunk []item) func(*sqs.SendMessageBatchOutput, error) {
	if f.cfg.Tracer == nil {
		return func(*sqs.SendMessageBatchOutput, error) {}
	}
	ends := make([]func(jobs.EnqueueResult), len(chunk))
	results := make([]jobs.EnqueueResult, len(chunk))
	for n, it := range chunk {
		env, _ := jobs.DecodeEnvelope(it.body) // a pointer or a malformed body: no kind, no trace
		results[n] = jobs.EnqueueResult{ID: it.id, Kind: env.Kind, QueueURL: it.queue}
		_, ends[n] = f.cfg.Tracer.StartEnqueue(ctx, jobs.EnqueueSpan{
			ID: it.id, Kind: env.Kind, QueueURL: it.queue, GroupID: it.group, Trace: env.Trace, Batch: true,
		})
	}
	return func(out *sqs.SendMessageBatchOutput, err error) {
		if out != nil {
			for _, e := range out.Successful {
				if n, convErr := strconv.Atoi(aws.ToString(e.Id)); convErr == nil && n < len(chunk) {
					results[n].MessageID = aws.ToString(e.MessageId)
				}
			}
			for _, e := range out.Failed {
				if n, convErr := strconv.Atoi(aws.ToString(e.Id)); convErr == nil && n < len(chunk) {
					results[n].Err = fmt.Errorf("outbox: send refused: %s: %s", aws.ToString(e.Code), aws.ToString(e.Message))
				}
			}
		}
		for n, end := range ends {
			if err != nil {
				results[n].Err = err
			}
			end(results[n])
		}
	}
}

// entry is the item as a SendMessageBatch entry with id.
func (it item) entry(id string, now time.Time) sqstypes.SendMessageBatchRequestEntry {
	e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(it.body)}
	if it.group != "" {
		e.MessageGroupId = aws.String(it.group)
	}
	if it.dedup != "" {
		e.MessageDeduplicationId = aws.String(it.dedup)
	}
	if it.payloadSize != "" {
		// As the client sends a claim check: the extended clients' size attribute.
		e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
			contract.AttrPayloadSize: {DataType: aws.String("Number"), StringValue: aws.String(it.payloadSize)},
		}
	}
	if it.deliverAt > 0 && it.dedup == "" {
		if left := time.UnixMilli(it.deliverAt).Sub(now); left > 0 {
			e.DelaySeconds = int32(min((left+time.Second-1)/time.Second, jobs.MaxSQSDelay/time.Second))
		}
	}
	return e
}

// neverSendable reports whether a failed SendMessageBatch call fails for good, whatever the
// retries: the caller may not send there, the queue does not exist, the request is invalid. A
// throttle, a service error or a transport error is not.
func neverSendable(err error) (code string, never bool) {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return "", false
	}
	code = api.ErrorCode()
	switch code {
	case "AccessDenied", "AccessDeniedException", "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue",
		"InvalidParameterValue", "InvalidParameterValueException", "InvalidAddress", "InvalidMessageContents",
		"InvalidSecurity", "UnsupportedOperation", "KmsAccessDenied", "KMS.AccessDeniedException", "KmsDisabled",
		"KmsNotFound", "KmsInvalidState", "KmsInvalidKeyUsage", "BatchRequestTooLong":
		return code, true
	}
	return code, false
}

// allowed reports whether the forwarder may send to queue (ForwarderConfig.Queues).
func (f *Forwarder) allowed(queue string) bool {
	return len(f.cfg.Queues) == 0 || slices.Contains(f.cfg.Queues, queue)
}

// skip logs an item that can never be sent; it stays in the table until its TTL.
func (f *Forwarder) skip(ctx context.Context, it item, why, detail string) {
	f.cfg.Logger.ErrorContext(ctx, "outbox: item skipped: it can never be sent; it stays in the table until its TTL",
		"job_id", it.id, "queue_url", it.queue, "sequence_number", it.seq, "reason", why, "error", detail)
}

// writeSkipped writes the OutboxItemsSkipped embedded-metric line.
func (f *Forwarder) writeSkipped(n int) {
	line := fmt.Sprintf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":%q,"Dimensions":[["Table"]],"Metrics":[{"Name":%q,"Unit":"Count"}]}]},"Table":%q,%q:%d}`+"\n",
		f.cfg.Now().UnixMilli(), contract.MetricNamespace, MetricItemsSkipped, f.cfg.Table, MetricItemsSkipped, n)
	_, _ = io.WriteString(f.cfg.Metrics, line)
}

// MetricItemsSkipped counts the outbox items a forwarder skipped as never sendable.
const MetricItemsSkipped = "OutboxItemsSkipped"

// EnvQueues names the queue URLs a forwarder may send to, separated by spaces (ForwarderConfig.Queues).
const EnvQueues = "JOBKIT_OUTBOX_QUEUES"

// ForwarderConfigFromEnv returns the configuration the OutboxForwarder construct gives its
// function: the state table (JOBKIT_IDEMPOTENCY_TABLE) and the queues it may send to
// (JOBKIT_OUTBOX_QUEUES), with SQS and DynamoDB clients from awsCfg.
func ForwarderConfigFromEnv(awsCfg aws.Config) (ForwarderConfig, error) {
	table := os.Getenv(contract.EnvIdempotencyTable)
	if table == "" {
		return ForwarderConfig{}, errors.New("outbox: " + contract.EnvIdempotencyTable + " is not set (the OutboxForwarder construct sets it)")
	}
	return ForwarderConfig{
		SQS: sqs.NewFromConfig(awsCfg), DynamoDB: dynamodb.NewFromConfig(awsCfg), Table: table,
		Queues: strings.Fields(os.Getenv(EnvQueues)),
	}, nil
}

// delete deletes sent items, 25 a call, retrying unprocessed ones a few times; what is left is
// logged and expires with its TTL.
func (f *Forwarder) delete(ctx context.Context, items []item) {
	for start := 0; start < len(items); start += 25 {
		var reqs []ddbtypes.WriteRequest
		for _, it := range items[start:min(start+25, len(items))] {
			reqs = append(reqs, ddbtypes.WriteRequest{DeleteRequest: &ddbtypes.DeleteRequest{
				Key: map[string]ddbtypes.AttributeValue{AttrID: &ddbtypes.AttributeValueMemberS{Value: KeyPrefix + it.id}},
			}})
		}
		pending := map[string][]ddbtypes.WriteRequest{f.cfg.Table: reqs}
		for try := 0; len(pending[f.cfg.Table]) > 0 && try < 4; try++ {
			if try > 0 {
				time.Sleep(time.Duration(50<<try) * time.Millisecond)
			}
			out, err := f.cfg.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				continue
			}
			pending = out.UnprocessedItems
		}
		if n := len(pending[f.cfg.Table]); n > 0 {
			f.cfg.Logger.WarnContext(ctx, "outbox: sent items not deleted; they expire with their TTL", "items", n)
		}
	}
}
