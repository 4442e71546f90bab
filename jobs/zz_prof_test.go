package jobs_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

type zzSQS struct{}

func (zzSQS) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func BenchmarkZZSameRecords(b *testing.B) {
	evs0 := jobstest.SampleEvents(10000, 10)
	raw, _ := json.Marshal(evs0)
	var evs []events.SQSEvent
	json.Unmarshal(raw, &evs)
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[jobstest.SampleArgs](func(context.Context, *jobs.Job[jobstest.SampleArgs]) error { return nil }))
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://sqs.invalid"), Credentials: aws.AnonymousCredentials{}, HTTPClient: zzSQS{}})
	cfg := jobstest.Config(client)
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := jobs.NewSQSHandler(workers, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		resp, err := h(ctx, evs[i%len(evs)])
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatal(err, resp)
		}
		n += 10
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
}
