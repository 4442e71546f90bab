package jobs

import (
	"strconv"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// The first heartbeat of a batch of first deliveries is due a third of the visibility timeout
// after the earliest receipt; with a redelivery, or without the receipt time, almost at once.
func TestFirstBeatAt(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	msg := func(count, firstReceive string) wire.SQSMessage {
		m := wire.SQSMessage{MessageID: "m", Attributes: []wire.SQSAttribute{{Name: "ApproximateReceiveCount", Value: count}}}
		if firstReceive != "" {
			m.Attributes = append(m.Attributes, wire.SQSAttribute{Name: "ApproximateFirstReceiveTimestamp", Value: firstReceive})
		}
		return m
	}
	h := &sqsHandler{workers: NewWorkers(), cfg: Config{VisibilityTimeout: 30 * time.Second}}
	h.lookup = h.workers.lookup
	for _, c := range []struct {
		name string
		msgs []wire.SQSMessage
		want time.Duration // after now
	}{
		{"first deliveries", []wire.SQSMessage{msg("1", ms(time.Second)), msg("1", ms(4*time.Second))}, 6 * time.Second},
		{"a third already used", []wire.SQSMessage{msg("1", ms(20*time.Second))}, firstBeatDelay},
		{"a redelivery", []wire.SQSMessage{msg("1", ms(time.Second)), msg("2", ms(time.Minute))}, firstBeatDelay},
		{"no receipt time", []wire.SQSMessage{msg("1", "")}, firstBeatDelay},
		{"no receive count", []wire.SQSMessage{{MessageID: "m"}}, firstBeatDelay},
	} {
		b := &batch{h: h}
		b.records = b.inline[:len(c.msgs)]
		b.prepare(c.msgs)
		got := b.firstBeatAt(now).Sub(now)
		if d := got - c.want; d < -10*time.Millisecond || d > 10*time.Millisecond {
			t.Errorf("%s: first beat after %s, want %s", c.name, got, c.want)
		}
	}
	h.firstBeat = 10 * time.Second // the container Consumer's
	b := &batch{h: h}
	b.records = b.inline[:1]
	b.prepare([]wire.SQSMessage{msg("2", "")})
	if got := b.firstBeatAt(now).Sub(now); got != 10*time.Second {
		t.Errorf("container: first beat after %s, want 10s", got)
	}
}
