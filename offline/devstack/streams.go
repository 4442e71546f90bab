package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// streamPoller is a running DynamoDB Streams event source mapping.
type streamPoller struct {
	function string
	mapping  deploy.StreamEventSourceMapping
	p        *esm.StreamPoller
}

// StreamMappingStats is one DynamoDB Streams event source mapping's counters.
type StreamMappingStats struct {
	Function string
	Table    string
	esm.StreamStats
}

// newStreamPoller makes the stream poller of mapping m, invoking rt (function fn's runtime).
// Records given up after the mapping's retries are described on its on-failure queue, as
// Lambda does, when that queue is in the deployment.
func newStreamPoller(cfg *Config, rt *lambdaruntime.Runtime, fn deploy.Function, m deploy.StreamEventSourceMapping) (*streamPoller, error) {
	sm := esm.StreamMapping{
		StreamARN: m.StreamARN, BatchSize: m.BatchSize, TrimHorizon: m.StartingPosition == "TRIM_HORIZON",
		ReportBatchItemFailures: m.ReportBatchItemFailures, MaximumRetryAttempts: m.MaximumRetryAttempts,
		MaximumRecordAge: m.MaximumRecordAge, Filters: m.Filters,
	}
	if m.OnFailureURL != "" {
		client, log := sqs.NewFromConfig(cfg.AWS), cfg.Logger
		sm.OnSkip = func(ctx context.Context, reason string, recs []events.DynamoDBEventRecord) {
			body, err := onFailureRecord(m, fn.ARN, reason, recs)
			if err == nil {
				_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.OnFailureURL), MessageBody: aws.String(body)})
			}
			if err != nil {
				log.Error("stream batch given up, and its on-failure record not sent", "function", fn.Name, "records", len(recs), "error", err)
			}
		}
	}
	p, err := esm.NewStreamPoller(dynamodbstreams.NewFromConfig(cfg.AWS), rt, sm, cfg.Logger.With("function", fn.Name))
	if err != nil {
		return nil, fmt.Errorf("devstack: mapping %s: %w", m.LogicalID, err)
	}
	return &streamPoller{function: fn.Name, mapping: m, p: p}, nil
}

// onFailureRecord is what Lambda sends to a stream mapping's on-failure destination: where the
// records given up are in the stream, not the records.
func onFailureRecord(m deploy.StreamEventSourceMapping, functionARN, reason string, recs []events.DynamoDBEventRecord) (string, error) {
	first, last := recs[0], recs[len(recs)-1]
	b, err := json.Marshal(map[string]any{
		"requestContext": map[string]any{
			"functionArn": functionARN, "condition": reason, "approximateInvokeCount": m.MaximumRetryAttempts + 1,
		},
		"version":   "1.0",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": map[string]any{
			"startSequenceNumber":             first.Change.SequenceNumber,
			"endSequenceNumber":               last.Change.SequenceNumber,
			"approximateArrivalOfFirstRecord": first.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			"approximateArrivalOfLastRecord":  last.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			"batchSize":                       len(recs),
			"streamArn":                       m.StreamARN,
		},
	})
	return string(b), err
}

// StreamStats returns each DynamoDB Streams event source mapping's counters, in start order.
func (s *Stack) StreamStats() []StreamMappingStats {
	out := make([]StreamMappingStats, len(s.streamPollers))
	for i, p := range s.streamPollers {
		out[i] = StreamMappingStats{Function: p.function, Table: p.mapping.Table, StreamStats: p.p.Stats()}
	}
	return out
}

// launchStreams runs the stream pollers until runCtx ends.
func (s *Stack) launchStreams(runCtx context.Context) {
	for _, p := range s.streamPollers {
		s.wg.Go(func() {
			_ = p.p.Run(runCtx)
		})
		s.log.Info("stream event source mapping started", "function", p.function, "table", p.mapping.Table,
			"batch_size", p.mapping.BatchSize, "filters", len(p.mapping.Filters))
	}
}
