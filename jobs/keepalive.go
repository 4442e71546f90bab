package jobs

import (
	"context"
	"time"
)

type keepAliveKey struct{}

// ContextWithKeepAlive marks ctx as the context of job runs kept alive by heartbeats, whose
// messages come back window after their process dies (see KeepAlive). The Consumer sets it on
// every job it runs; a loop of one's own that extends its messages' visibility can do the same.
func ContextWithKeepAlive(ctx context.Context, window time.Duration) context.Context {
	return context.WithValue(ctx, keepAliveKey{}, window)
}

// KeepAlive reports whether the job run of ctx is kept alive by heartbeats rather than bounded by
// an invocation, and if so its window: how soon after its process dies the job's message comes
// back (the queue's visibility timeout). It is true in a container (Consumer), where a job may
// run up to 12 h: middleware that holds something for the run, such as an idempotency claim,
// should hold it for the window and renew it, not until the context's distant deadline. It is
// false on Lambda, where the invocation's deadline bounds the run.
func KeepAlive(ctx context.Context) (window time.Duration, ok bool) {
	window, ok = ctx.Value(keepAliveKey{}).(time.Duration)
	return window, ok && window > 0
}
