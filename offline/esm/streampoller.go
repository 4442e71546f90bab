package esm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// StreamsAPI is the part of the DynamoDB Streams client the stream poller calls.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsAPI = (*dynamodbstreams.Client)(nil)

// Limits and defaults of a DynamoDB Streams event source mapping, as Lambda documents them.
const (
	DefaultStreamBatchSize = 100
	MaxStreamBatchSize     = 10000
)

// StreamMapping is a DynamoDB Streams event source mapping: the settings of
// AWS::Lambda::EventSourceMapping that matter here.
type StreamMapping struct {
	StreamARN string // required
	// BatchSize: records per invocation, 1-10000; zero means 100.
	BatchSize int
	// TrimHorizon starts at the oldest record (StartingPosition TRIM_HORIZON); else LATEST.
	TrimHorizon bool
	// ReportBatchItemFailures is FunctionResponseTypes [ReportBatchItemFailures]: a response listing
	// sequence numbers checkpoints before the lowest one, and the batch is retried from it.
	ReportBatchItemFailures bool
	// MaximumRetryAttempts: retries of a failed batch before its records are skipped; -1 (the
	// default for a zero value here too) retries until the records expire.
	MaximumRetryAttempts int
	// PollInterval is how long an idle shard waits between GetRecords calls; default 250 ms
	// (Lambda polls each shard four times a second).
	PollInterval time.Duration
	// Filters are FilterCriteria patterns (see EventFilter): records matching none are
	// checkpointed past without invoking the function. None: every record is handed over.
	Filters []string
	// MaximumRecordAge: a failing batch whose first unfinished record is older than this is given
	// up (Lambda's MaximumRecordAgeInSeconds); zero keeps records until they succeed or the
	// retries run out.
	MaximumRecordAge time.Duration
	// OnSkip, if set, is called with the records given up and why, as Lambda's on-failure record
	// says it: SkipRetriesExhausted or SkipRecordAge (Lambda's on-failure destination gets their
	// stream coordinates).
	OnSkip func(ctx context.Context, reason string, skipped []events.DynamoDBEventRecord)
}

// Why a stream poller gave records up (OnSkip), as Lambda's on-failure records name it.
const (
	SkipRetriesExhausted = "RetryAttemptsExhausted"
	SkipRecordAge        = "RecordAgeExceeded"
)

// StreamStats are a stream poller's counters.
type StreamStats struct {
	Invocations int64 // function invocations
	Records     int64 // records handed to the function, retries included
	Done        int64 // records checkpointed past (succeeded, or skipped after the retries)
	Retries     int64 // batches retried (whole, or from a reported failure)
	Skipped     int64 // records given up after MaximumRetryAttempts
	Filtered    int64 // records no filter pattern matched: checkpointed without an invocation
}

// StreamPoller is Lambda's DynamoDB Streams event source mapping, run locally: one reader per
// shard, each handing its records in order to the function in batches and moving on only past
// what succeeded. A function error (a crash, a timeout, an error result) retries the whole batch;
// with ReportBatchItemFailures a response listing sequence numbers retries from the lowest (the
// records before it are done), and an invalid response retries the whole batch, as "Configuring
// partial batch response with DynamoDB Streams" documents.
type StreamPoller struct {
	api    StreamsAPI
	fn     Invoker
	m      StreamMapping
	filter *EventFilter
	log    *slog.Logger
	stats  struct{ invocations, records, done, retries, skipped, filtered atomic.Int64 }
}

// NewStreamPoller returns a poller for m that invokes fn. logger may be nil.
func NewStreamPoller(api StreamsAPI, fn Invoker, m StreamMapping, logger *slog.Logger) (*StreamPoller, error) {
	if m.StreamARN == "" {
		return nil, &ConfigError{Reason: "StreamARN is required"}
	}
	m.BatchSize = cmp.Or(m.BatchSize, DefaultStreamBatchSize)
	if m.BatchSize < 1 || m.BatchSize > MaxStreamBatchSize {
		return nil, &ConfigError{Reason: fmt.Sprintf("BatchSize %d is outside 1-%d", m.BatchSize, MaxStreamBatchSize)}
	}
	if m.MaximumRetryAttempts == 0 {
		m.MaximumRetryAttempts = -1
	}
	if m.PollInterval <= 0 {
		m.PollInterval = 250 * time.Millisecond
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	filter, err := NewEventFilter(m.Filters)
	if err != nil {
		return nil, err
	}
	return &StreamPoller{api: api, fn: fn, m: m, filter: filter, log: logger}, nil
}

// Stats returns the poller's counters.
func (p *StreamPoller) Stats() StreamStats {
	return StreamStats{
		Invocations: p.stats.invocations.Load(), Records: p.stats.records.Load(), Done: p.stats.done.Load(),
		Retries: p.stats.retries.Load(), Skipped: p.stats.skipped.Load(), Filtered: p.stats.filtered.Load(),
	}
}

// Run reads the stream until ctx ends, starting a reader for each shard it finds (it looks for
// new shards every few seconds). It returns nil when ctx ends.
func (p *StreamPoller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[string]bool{}
	for {
		out, err := p.api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.m.StreamARN)})
		if err != nil && ctx.Err() == nil {
			p.log.Warn("esm: describe stream failed", "stream", p.m.StreamARN, "error", err)
		}
		if err == nil {
			for _, sh := range out.StreamDescription.Shards {
				id := aws.ToString(sh.ShardId)
				if started[id] {
					continue
				}
				started[id] = true
				wg.Go(func() {
					p.readShard(ctx, id)
				})
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

// readShard hands one shard's records to the function in order.
func (p *StreamPoller) readShard(ctx context.Context, shard string) {
	typ := streamtypes.ShardIteratorTypeLatest
	if p.m.TrimHorizon {
		typ = streamtypes.ShardIteratorTypeTrimHorizon
	}
	it, err := p.api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(p.m.StreamARN), ShardId: aws.String(shard), ShardIteratorType: typ,
	})
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("esm: shard iterator failed", "shard", shard, "error", err)
		}
		return
	}
	iter := it.ShardIterator
	var pending []streamtypes.Record // read, not yet done, in order
	attempts := 0
	for ctx.Err() == nil {
		if len(pending) < p.m.BatchSize && iter != nil {
			// With a filter, most records of a busy table may be dropped: read the most a call
			// returns, so the shard keeps up (the batches stay BatchSize).
			limit := min(p.m.BatchSize, 1000)
			if !p.filter.Empty() {
				limit = 1000
			}
			out, err := p.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(int32(limit))})
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("esm: get records failed", "shard", shard, "error", err)
					sleep(ctx, time.Second)
				}
				continue
			}
			pending = append(pending, p.matching(out.Records)...)
			iter = out.NextShardIterator // nil: the shard is closed
		}
		if len(pending) == 0 {
			if iter == nil {
				return // a closed shard, read to its end
			}
			sleep(ctx, p.m.PollInterval)
			continue
		}
		batch := pending[:min(len(pending), p.m.BatchSize)]
		done := p.invoke(ctx, batch)
		if ctx.Err() != nil {
			return
		}
		if done < len(batch) {
			attempts++
			p.stats.retries.Add(1)
			if reason := p.giveUp(attempts, batch[done]); reason != "" {
				skipped := len(batch) - done
				p.log.Warn("esm: stream records skipped", "shard", shard, "records", skipped, "reason", reason)
				p.stats.skipped.Add(int64(skipped))
				if p.m.OnSkip != nil {
					recs := make([]events.DynamoDBEventRecord, 0, skipped)
					for _, r := range batch[done:] {
						recs = append(recs, DynamoDBEventRecord(r, p.m.StreamARN))
					}
					p.m.OnSkip(ctx, reason, recs)
				}
				done, attempts = len(batch), 0
			}
		} else {
			attempts = 0
		}
		p.stats.done.Add(int64(done))
		pending = pending[done:]
		if done == 0 {
			sleep(ctx, p.m.PollInterval) // a failing batch is retried, not spun on
		}
	}
}

// giveUp says why a failing batch whose first unfinished record is first, after attempts
// failures, is given up, or "" to retry it.
func (p *StreamPoller) giveUp(attempts int, first streamtypes.Record) string {
	if p.m.MaximumRetryAttempts >= 0 && attempts > p.m.MaximumRetryAttempts {
		return SkipRetriesExhausted
	}
	if p.m.MaximumRecordAge > 0 && first.Dynamodb != nil && first.Dynamodb.ApproximateCreationDateTime != nil &&
		time.Since(*first.Dynamodb.ApproximateCreationDateTime) > p.m.MaximumRecordAge {
		return SkipRecordAge
	}
	return ""
}

// matching returns the records the mapping's filter lets through; the others are done.
func (p *StreamPoller) matching(records []streamtypes.Record) []streamtypes.Record {
	if p.filter.Empty() {
		return records
	}
	out := records[:0:0]
	for _, r := range records {
		b, err := json.Marshal(DynamoDBEventRecord(r, p.m.StreamARN))
		if err == nil && p.filter.Match(b) {
			out = append(out, r)
			continue
		}
		p.stats.filtered.Add(1)
		p.stats.done.Add(1)
	}
	return out
}

// invoke runs the function on batch and returns how many of its records are done.
func (p *StreamPoller) invoke(ctx context.Context, batch []streamtypes.Record) int {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(batch))}
	inBatch := make(map[string]bool, len(batch))
	for i, r := range batch {
		ev.Records[i] = DynamoDBEventRecord(r, p.m.StreamARN)
		inBatch[ev.Records[i].Change.SequenceNumber] = true
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		p.log.Error("esm: stream event does not encode", "error", err)
		return 0
	}
	p.stats.invocations.Add(1)
	p.stats.records.Add(int64(len(batch)))
	res, err := p.fn.Invoke(ctx, payload)
	if err != nil || res.Outcome != lambdaruntime.Success {
		if ctx.Err() == nil {
			p.log.Warn("esm: stream batch failed: retried whole", "records", len(batch), "error", errors.Join(err, resultErr(res)))
		}
		return 0
	}
	if !p.m.ReportBatchItemFailures {
		return len(batch)
	}
	failed, err := ParseBatchResponse(res.Payload, inBatch)
	if err != nil {
		p.log.Warn("esm: stream batch response invalid: retried whole", "error", err)
		return 0
	}
	if len(failed) == 0 {
		return len(batch)
	}
	// Checkpoint before the lowest sequence number reported.
	lowest := -1
	for i := range ev.Records {
		for _, f := range failed {
			if ev.Records[i].Change.SequenceNumber == f && (lowest < 0 || lessSeq(f, ev.Records[lowest].Change.SequenceNumber)) {
				lowest = i
			}
		}
	}
	if lowest < 0 {
		return 0
	}
	return lowest
}

// lessSeq compares two stream sequence numbers (decimal strings of up to 40 digits).
func lessSeq(a, b string) bool {
	x, okA := new(big.Int).SetString(a, 10)
	y, okB := new(big.Int).SetString(b, 10)
	if !okA || !okB {
		return a < b
	}
	return x.Cmp(y) < 0
}

func resultErr(res lambdaruntime.Result) error {
	if res.Outcome == 0 {
		return nil
	}
	return res.Err()
}
