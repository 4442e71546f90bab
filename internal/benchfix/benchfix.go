// Package benchfix holds the fixtures the benchmarks share: the sample job, its envelopes and
// SQS events (the same bytes on every call, so a comparison with another runtime decodes the very
// same input), and a runner that pushes one batch through the runtime with an in-process SQS.
// It is not API: users' tests use jobs/jobstest.
package benchfix

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// SampleArgs is the job the runtime benchmarks run, and the shape a comparison with other batch
// runtimes decodes (Powertools' batch utility with a pydantic model of the same four fields).
type SampleArgs struct {
	UserID   int64   `json:"user_id"`
	Email    string  `json:"email"`
	Template string  `json:"template"`
	Amount   float64 `json:"amount"`
}

// Kind returns "bench.sample".
func (SampleArgs) Kind() string { return "bench.sample" }

// SampleEnvelopeTime is the enqueued_at of every sample envelope.
var SampleEnvelopeTime = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// SampleArgsAt returns the args of sample envelope i.
func SampleArgsAt(i int) SampleArgs {
	return SampleArgs{
		UserID:   int64(100000 + i),
		Email:    "user" + strconv.Itoa(i) + "@example.com",
		Template: []string{"welcome", "receipt", "reminder"}[i%3],
		Amount:   float64(i%1000) + 0.25,
	}
}

// SampleEnvelopes returns n message bodies of SampleArgs jobs, the same on every call: job ids
// "sample-<i>", enqueued at SampleEnvelopeTime. A comparison feeds the same bodies to each runtime.
func SampleEnvelopes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = jobstest.Body(SampleArgsAt(i), &jobstest.MessageOpts{ID: "sample-" + strconv.Itoa(i), EnqueuedAt: SampleEnvelopeTime})
	}
	return out
}

// WriteSampleEnvelopes writes SampleEnvelopes(n) to w, one body per line (JSON Lines), for a
// runtime in another language to decode the very same bytes.
func WriteSampleEnvelopes(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	for _, body := range SampleEnvelopes(n) {
		if _, err := bw.WriteString(body + "\n"); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// SampleEvents splits SampleEnvelopes(n) into Lambda SQS events of batchSize records.
func SampleEvents(n, batchSize int) []events.SQSEvent {
	bodies := SampleEnvelopes(n)
	var evs []events.SQSEvent
	for start := 0; start < n; start += batchSize {
		end := min(start+batchSize, n)
		ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, end-start)}
		for i := start; i < end; i++ {
			ev.Records = append(ev.Records, jobstest.RawMessage(bodies[i], &jobstest.MessageOpts{
				ID: "sample-" + strconv.Itoa(i), EnqueuedAt: SampleEnvelopeTime, MessageID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			}))
		}
		evs = append(evs, ev)
	}
	return evs
}

// NewBenchRunner returns a function that runs one SQS batch of batchSize SampleArgs jobs through
// NewLambdaHandler with a no-op worker. The handler's SQS client is a real *sqs.Client whose HTTP
// transport answers in-process, so what it measures is jobkit's own code (decode, dispatch,
// concurrency, outcome, metrics line), not the network. It fails if any record is not a success.
func NewBenchRunner(batchSize int) func(ctx context.Context) error {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[SampleArgs](func(context.Context, *jobs.Job[SampleArgs]) error { return nil }))
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://sqs.invalid"),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   inProcessSQS{},
	})
	cfg := jobstest.Config(client)
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	handler := jobs.NewLambdaHandler(workers, cfg).HandleSQS
	ev := SampleEvents(batchSize, batchSize)[0]
	return func(ctx context.Context) error {
		resp, err := handler(ctx, ev)
		if err != nil {
			return err
		}
		if len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("benchfix: %d records failed", len(resp.BatchItemFailures))
		}
		return nil
	}
}

// inProcessSQS answers every SQS call with an empty success.
type inProcessSQS struct{}

// Do answers req with 200 and an empty JSON object.
func (inProcessSQS) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader("{}")),
		Request:    req,
	}, nil
}
