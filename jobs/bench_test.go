package jobs_test

import (
	"context"
	"testing"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
)

// BenchmarkSQSHandler runs batches of 10 jobs with a no-op worker through the runtime, with an
// in-process SQS transport: it measures the runtime's own cost per message.
func BenchmarkSQSHandler(b *testing.B) {
	run := benchfix.NewBenchRunner(10)
	ctx, cancel := context.WithTimeout(context.Background(), 15*60e9)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/msg")
}

// BenchmarkDecodeEnvelope decodes ordinary envelopes with DecodeEnvelope (the fast path).
func BenchmarkDecodeEnvelope(b *testing.B) {
	bodies := benchfix.SampleEnvelopes(64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := jobs.DecodeEnvelope(bodies[i%len(bodies)]); err != nil {
			b.Fatal(err)
		}
	}
}
