package main

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/jobkit-go/jobkit/jobs"
)

func invocationPayloads(tb testing.TB) [][]byte {
	evs := compareEvents()
	payloads := make([][]byte, len(evs))
	for i := range evs {
		var err error
		if payloads[i], err = json.Marshal(evs[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return payloads
}

// TestInvocationSidesAgree checks each side of the invocation benchmark runs every payload
// without a failure or a dead-letter send.
func TestInvocationSidesAgree(t *testing.T) {
	payloads := invocationPayloads(t)[:50]
	var calls atomic.Int64
	for _, h := range []lambda.Handler{
		jobs.NewLambdaHandler(noopWorkers(), benchConfig(&calls)),
		lambda.NewHandler(jobs.NewLambdaHandler(noopWorkers(), benchConfig(&calls)).HandleSQS),
		lambda.NewHandler(naiveHandler),
	} {
		if _, err := invocationPass(context.Background(), h, payloads, &calls); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkInvocationRaw(b *testing.B) {
	payloads := invocationPayloads(b)
	var calls atomic.Int64
	h := jobs.NewLambdaHandler(noopWorkers(), benchConfig(&calls))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.Invoke(context.Background(), payloads[i%len(payloads)]); err != nil {
			b.Fatal(err)
		}
	}
}
