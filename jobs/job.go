package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// JobArgs is a job's arguments: a plain struct whose Kind names the job on the wire.
// Kinds are wire contracts: never rename one without keeping the old name as an alias.
//
//	type SendEmail struct{ To string `json:"to"` }
//	func (SendEmail) Kind() string { return "email.send" }
type JobArgs interface {
	Kind() string
}

// JobRow is everything about a job except its typed arguments: the envelope and the delivery.
type JobRow struct {
	ID   string // envelope id
	Kind string // envelope kind
	Key  string // idempotency key the producer set; empty means the id is the key
	// EncodedArgs is the raw args, as enqueued. In the runtime it shares the message body's
	// memory: read it, or assign another slice, but do not modify its bytes.
	EncodedArgs json.RawMessage
	EnqueuedAt  time.Time
	Trace       string // W3C traceparent from the producer (or SQS's AWSTraceHeader), if any; the job's context carries it
	Batch       string // the fan-out batch the job is a member of (jobs/state), if any

	Attempt         int    // 1 on first run: ApproximateReceiveCount, less deliveries that did not run (Config.Deliveries)
	Deliveries      int    // ApproximateReceiveCount: every delivery of the message so far, run or not (0: unknown)
	MaxAttempts     int    // attempts allowed before the runtime dead-letters the job
	MessageID       string // SQS message id
	GroupID         string // FIFO message group id; empty on Standard queues
	QueueURL        string // the queue the message came from
	FirstReceivedAt time.Time

	reg        *registered  // the worker for Kind, found by the runtime
	argsSrc    string       // the validated JSON EncodedArgs was made from, sharing its memory (runtime only)
	job        jobPtr       // a *Job of reg's type for this row, made by the runtime; nil once used
	argsReady  bool         // job's Args are decoded from argsSrc
	settling   uint32       // 1 once the worker returned (atomic): only the middleware's recording (idempotency, state) is left
	baseLogger *slog.Logger // the runtime's logger
	logger     *slog.Logger // baseLogger with this job's attributes, made on first use
}

// Logger returns a logger whose lines carry the job's id, kind and attempt (and message id and
// trace id), as the runtime's own lines do. Use it from the job's goroutine.
func (r *JobRow) Logger() *slog.Logger {
	if r.logger == nil {
		base := r.baseLogger
		if base == nil {
			base = slog.Default()
		}
		r.logger = base.With(jobAttrs(r)...)
	}
	return r.logger
}

// jobAttrs are the attributes on every log line about a job.
func jobAttrs(r *JobRow) []any {
	attrs := []any{
		LogString("job_id", r.ID), LogString("kind", r.Kind), slog.Int("attempt", r.Attempt),
		slog.String("message_id", r.MessageID),
	}
	if id := TraceID(r.Trace); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	return attrs
}

// Job is a job as a worker receives it: the row and the decoded arguments.
type Job[T JobArgs] struct {
	*JobRow
	Args T
}

// Worker runs jobs of one kind. Work's ctx ends at the job's deadline (before the Lambda deadline).
type Worker[T JobArgs] interface {
	Work(ctx context.Context, job *Job[T]) error
}

// WorkFunc adapts a function to a Worker.
type WorkFunc[T JobArgs] func(ctx context.Context, job *Job[T]) error

// Work calls f.
func (f WorkFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// Handler runs one decoded job whatever its kind; middleware wraps it.
type Handler func(ctx context.Context, row *JobRow) error

// Middleware wraps the running of every job (idempotency, tracing, ...). The runtime calls the
// chain with the job's context; the innermost handler decodes the args and calls the worker.
type Middleware func(next Handler) Handler

// Workers is the registry of workers by kind, plus the middleware every job runs through.
// It is safe for concurrent use; register everything before the first batch runs.
type Workers struct {
	mu         sync.RWMutex
	byKind     map[string]*registered
	middleware []Middleware
	chain      Handler // middleware around dispatch, built on first use after a change
}

type registered struct {
	kind string
	run  Handler        // decodes args and runs the worker
	plan *wire.ArgsPlan // decodes args without reflection, or nil
	opts KindOpts       // the kind's own attempts, timeout and backoff

	// The runtime makes the jobs of a batch: n zero Job[T] in one allocation, each jobSize
	// bytes with its Args at argsOffset (its *JobRow is at offset 0).
	newJobs    func(n int) jobPtr
	jobSize    uintptr
	argsOffset uintptr
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers {
	return &Workers{byKind: map[string]*registered{}}
}

// Use appends middleware; the first added is the outermost.
func (w *Workers) Use(mw ...Middleware) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.middleware = append(w.middleware, mw...)
	w.chain = nil
}

// KindOpts are one kind's own settings, given to AddWorker: each set field overrides the
// function's Config for that kind's jobs, on Lambda and in containers alike, as river's
// per-worker Timeout and NextRetry do. The runtime reads them from the registry it has already
// looked the kind up in: no cost per job.
type KindOpts struct {
	// MaxAttempts is how many runs the kind's jobs get before they are dead-lettered
	// (attempts_exhausted); 0 means Config.MaxAttempts. It may not exceed Config.MaxAttempts:
	// the queue's redrive policy is sized for the function's attempts (the runtime refuses more
	// when it starts).
	MaxAttempts int
	// Timeout is each run's time limit; 0 means Config.JobTimeout. A run past it sees its
	// context end with context.DeadlineExceeded, and fails (it is retried).
	Timeout time.Duration
	// Backoff is the delay before the run after a failed attempt n; nil means Config.Backoff.
	Backoff BackoffFunc
}

// AddWorker registers worker for T's kind, with its own settings if opts gives them (at most
// one KindOpts). It panics on an empty or duplicate kind, or invalid options: all are
// programming errors found at start-up. See AddWorkerSafely for an error instead.
func AddWorker[T JobArgs](workers *Workers, worker Worker[T], opts ...KindOpts) {
	if err := AddWorkerSafely(workers, worker, opts...); err != nil {
		panic(err)
	}
}

// AddWorkerSafely registers worker for T's kind, or returns an error for an empty or duplicate
// kind, or invalid options.
func AddWorkerSafely[T JobArgs](workers *Workers, worker Worker[T], opts ...KindOpts) error {
	var zero T
	kind := zero.Kind()
	if kind == "" {
		return fmt.Errorf("jobs: %T has an empty Kind()", zero)
	}
	if worker == nil {
		return fmt.Errorf("jobs: nil worker for kind %q", kind)
	}
	var ko KindOpts
	switch {
	case len(opts) > 1:
		return fmt.Errorf("jobs: kind %q: give at most one KindOpts", kind)
	case len(opts) == 1:
		ko = opts[0]
	}
	if ko.MaxAttempts < 0 || ko.Timeout < 0 {
		return fmt.Errorf("jobs: kind %q: MaxAttempts and Timeout may not be negative (%d, %s)", kind, ko.MaxAttempts, ko.Timeout)
	}
	workers.mu.Lock()
	defer workers.mu.Unlock()
	if workers.byKind == nil {
		workers.byKind = map[string]*registered{}
	}
	if _, dup := workers.byKind[kind]; dup {
		return fmt.Errorf("jobs: a worker for kind %q is already registered", kind)
	}
	plan := wire.CompileArgsPlan(reflect.TypeFor[T]())
	reg := &registered{kind: kind, plan: plan, opts: ko}
	reg.newJobs, reg.jobSize, reg.argsOffset = jobLayout[T]()
	reg.run = func(ctx context.Context, row *JobRow) error {
		var job *Job[T]
		if p := (*Job[T])(row.job); p != nil && row.reg == reg && p.JobRow == row {
			// The runtime's job for this row, its args usually decoded with the envelope.
			job, row.job = p, nil
			ready := row.argsReady && row.argsIntact()
			row.argsReady = false
			if !ready {
				var zero T
				job.Args = zero
				if err := decodeArgs(row, plan, &job.Args); err != nil {
					return &ArgsError{Kind: kind, Err: err}
				}
			}
		} else {
			job = &Job[T]{JobRow: row}
			if err := decodeArgs(row, plan, &job.Args); err != nil {
				return &ArgsError{Kind: kind, Err: err}
			}
		}
		return worker.Work(ctx, job)
	}
	workers.byKind[kind] = reg
	return nil
}

// decodeArgs decodes row's args into dst exactly as json.Unmarshal does; no args leave the zero
// value. A flat struct of scalars decodes without reflection (wire.ArgsPlan); a type with its own
// UnmarshalJSON gets the args directly when the runtime has already validated them.
func decodeArgs[T any](row *JobRow, plan *wire.ArgsPlan, dst *T) error {
	if len(row.EncodedArgs) == 0 {
		return nil
	}
	validated := row.argsIntact()
	if plan != nil {
		src := row.argsSrc
		if !validated {
			src = string(row.EncodedArgs)
		}
		if plan.Decode(src, jobPtr(dst)) {
			return nil
		}
		var zero T
		*dst = zero
	} else if u, ok := any(dst).(json.Unmarshaler); ok && validated {
		return u.UnmarshalJSON(row.EncodedArgs)
	}
	return json.Unmarshal(row.EncodedArgs, dst)
}

// checkKinds refuses a kind that asks more attempts than the function's cfg allows.
func (w *Workers) checkKinds(cfg Config) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for kind, reg := range w.byKind {
		if a := reg.opts.MaxAttempts; a > cfg.MaxAttempts {
			return fmt.Errorf("jobs: kind %q asks %d attempts, its function allows %d (Config.MaxAttempts, %s): the queue's redrive policy is sized for the function's; raise it or lower the kind's",
				kind, a, cfg.MaxAttempts, contract.EnvMaxAttempts)
		}
	}
	return nil
}

// lookup returns the worker registered for kind, or nil.
func (w *Workers) lookup(kind string) *registered {
	w.mu.RLock()
	r := w.byKind[kind]
	w.mu.RUnlock()
	return r
}

// handler returns the middleware chain around the innermost handler, which decodes the args and
// calls the worker of row.Kind.
func (w *Workers) handler() Handler {
	w.mu.RLock()
	h := w.chain
	w.mu.RUnlock()
	if h != nil {
		return h
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.chain == nil {
		h := Handler(w.dispatch)
		for i := len(w.middleware) - 1; i >= 0; i-- {
			h = w.middleware[i](h)
		}
		w.chain = h
	}
	return w.chain
}

// dispatch runs the worker of row.Kind.
func (w *Workers) dispatch(ctx context.Context, row *JobRow) error {
	reg := row.reg
	if reg == nil || reg.kind != row.Kind {
		if reg = w.lookup(row.Kind); reg == nil {
			return &UnknownKindError{Kind: row.Kind}
		}
	}
	err := reg.run(ctx, row)
	atomic.StoreUint32(&row.settling, 1)
	return err
}

// Run runs one job through the middleware and the worker registered for row.Kind, as the runtime
// does (without its panic recovery, deadline or outcome handling). jobstest uses it.
func (w *Workers) Run(ctx context.Context, row *JobRow) error {
	return w.handler()(ctx, row)
}

// Kinds returns the registered kinds.
func (w *Workers) Kinds() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	kinds := make([]string, 0, len(w.byKind))
	for k := range w.byKind {
		kinds = append(kinds, k)
	}
	return kinds
}
