// Package jobctx holds what a job's context carries between the jobs runtime and the middleware
// around a job: the slot its result goes to (jobs.SetResult writes it; middleware that records
// job states reads it), and whether the run is kept alive by heartbeats rather than bounded by an
// invocation (middleware that holds something for the run, such as an idempotency claim, holds
// it for the window and renews it). Job code uses package jobs; this is for middleware.
package jobctx

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

type keepAliveKey struct{}

// WithKeepAlive marks ctx as the context of job runs kept alive by heartbeats, whose messages
// come back window after their process dies (see KeepAlive). The jobs Consumer sets it on every
// job it runs; a loop of one's own that extends its messages' visibility can do the same.
func WithKeepAlive(ctx context.Context, window time.Duration) context.Context {
	return context.WithValue(ctx, keepAliveKey{}, window)
}

// KeepAlive reports whether the job run of ctx is kept alive by heartbeats rather than bounded by
// an invocation, and if so its window: how soon after its process dies the job's message comes
// back (the queue's visibility timeout). It is true in a container (jobs.Consumer), where a job
// may run up to 12 h: middleware that holds something for the run, such as an idempotency claim,
// should hold it for the window and renew it, not until the context's distant deadline. It is
// false on Lambda, where the invocation's deadline bounds the run.
func KeepAlive(ctx context.Context) (window time.Duration, ok bool) {
	window, ok = ctx.Value(keepAliveKey{}).(time.Duration)
	return window, ok && window > 0
}

type resultKey struct{}

// ResultSlot holds the result a job sets with jobs.SetResult. Middleware that records job states
// makes one with WithResultSlot and reads it with Get once the job has returned.
type ResultSlot struct {
	mu  sync.Mutex
	raw json.RawMessage
}

// Get returns the result set, or nil.
func (s *ResultSlot) Get() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw
}

// Set stores raw, the JSON of a result (jobs.SetResult checks and encodes it). The last call wins.
func (s *ResultSlot) Set(raw json.RawMessage) {
	s.mu.Lock()
	s.raw = raw
	s.mu.Unlock()
}

// WithResultSlot returns ctx carrying a new ResultSlot, and the slot.
func WithResultSlot(ctx context.Context) (context.Context, *ResultSlot) {
	s := &ResultSlot{}
	return context.WithValue(ctx, resultKey{}, s), s
}

// Result returns the ResultSlot ctx carries, or nil.
func Result(ctx context.Context) *ResultSlot {
	s, _ := ctx.Value(resultKey{}).(*ResultSlot)
	return s
}
