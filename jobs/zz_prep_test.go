package jobs

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

type zzArgs struct {
	UserID   int64   `json:"user_id"`
	Email    string  `json:"email"`
	Template string  `json:"template"`
	Amount   float64 `json:"amount"`
}

func (zzArgs) Kind() string { return "bench.sample" }

func zzEvents(b *testing.B) []events.SQSEvent {
	var evs []events.SQSEvent
	for i := 0; i < 1000; i++ {
		var ev events.SQSEvent
		for j := 0; j < 10; j++ {
			n := i*10 + j
			args, _ := json.Marshal(zzArgs{UserID: int64(100000 + n), Email: "user" + string(rune('a'+n%26)) + "@example.com", Template: "receipt", Amount: float64(n%1000) + 0.25})
			body, _ := json.Marshal(Envelope{V: 1, ID: "sample-" + string(rune('a'+n%26)), Kind: "bench.sample", Args: args, EnqueuedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)})
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: "00000000-0000-4000-8000-0000000000", Body: string(body),
				Attributes: map[string]string{"ApproximateFirstReceiveTimestamp": "1795262400000", "ApproximateReceiveCount": "1", "SenderId": "AIDAJOBKITTEST", "SentTimestamp": "1795262400000"}})
		}
		evs = append(evs, ev)
	}
	raw, _ := json.Marshal(evs)
	evs = nil
	json.Unmarshal(raw, &evs)
	return evs
}

func BenchmarkZZPrepare(b *testing.B) {
	evs := zzEvents(b)
	w := NewWorkers()
	AddWorker(w, WorkFunc[zzArgs](func(context.Context, *Job[zzArgs]) error { return nil }))
	h := &sqsHandler{workers: w, lookup: w.lookup, cfg: Config{QueueURL: "q", MaxAttempts: 5}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := evs[i%len(evs)]
		bt := &batch{h: h}
		bt.records = bt.inline[:len(ev.Records)]
		bt.prepare(ev.Records)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/msg")
}
