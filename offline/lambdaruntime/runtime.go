package lambdaruntime

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Defaults Lambda applies when a function does not set them.
const (
	DefaultTimeout     = 3 * time.Second
	DefaultMemoryMB    = 128
	DefaultInitTimeout = 10 * time.Second // the on-demand init phase limit
	DefaultRegion      = "us-east-1"
	DefaultAccountID   = "123456789012"
)

// Function is what a runtime needs to know about one Lambda function.
type Function struct {
	// Name is the function name (AWS_LAMBDA_FUNCTION_NAME). Required.
	Name string
	// Bootstrap is the path of the executable Lambda would start (the provided.al2023 "bootstrap").
	// Required.
	Bootstrap string
	// Handler is the Handler property (_HANDLER); provided runtimes ignore it.
	Handler string
	// TaskRoot is the function's code (LAMBDA_TASK_ROOT, and the process's working directory);
	// default the directory of Bootstrap. An interpreted function's code is apart from its
	// bootstrap (InterpretedBootstrap).
	TaskRoot string
	// Env is the function's Environment.Variables. Keys Lambda reserves are rejected.
	Env map[string]string
	// Timeout is the invocation timeout; zero means Lambda's default of 3 s.
	Timeout time.Duration
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE; zero means 128. Nothing enforces it.
	MemoryMB int
	// MaxInstances caps the execution environments (processes) running at once; zero means 1.
	MaxInstances int
}

// Options is where and how a runtime runs its function. Nil means the defaults.
type Options struct {
	Region    string // AWS_REGION and AWS_DEFAULT_REGION; default us-east-1
	AccountID string // in the function ARN; default 123456789012 (the emulator's account)
	// Endpoint becomes AWS_ENDPOINT_URL, so the function's SDK clients call the emulator.
	// The function's own Env may override it.
	Endpoint string
	// Static credentials the function sees; default "test"/"test" when Endpoint is set.
	AccessKeyID, SecretAccessKey, SessionToken string
	// InitTimeout bounds the init phase (start to the first invocation/next); default 10 s.
	InitTimeout time.Duration
	// Output receives the function's stdout and stderr; default os.Stderr.
	Output io.Writer
	// Logger receives platform events (environment start and stop, timeouts, crashes); default discards.
	Logger *slog.Logger
	// ExtraEnv is added to every environment before Function.Env (which overrides it); neither
	// overrides the variables Lambda reserves. Example: GOCOVERDIR in tests.
	ExtraEnv map[string]string
	// OnStart, if set, is called each time an execution environment takes an invocation: its
	// process (pid) is now working on the event. Fault-injection tools kill the process from here
	// to crash an invocation midway. It runs on the invoking goroutine: it must not block.
	OnStart func(requestID string, pid int)
}

// Outcome says how an invocation ended.
type Outcome int

// Outcomes of an invocation.
const (
	Success       Outcome = iota + 1 // the runtime posted invocation/{id}/response
	FunctionError                    // the runtime posted invocation/{id}/error (or an oversized response)
	InitError                        // the environment failed to initialize (init/error, exit, init timeout)
	Timeout                          // the deadline passed; the environment was killed
	Crash                            // the process exited during the invocation; the environment is replaced
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case FunctionError:
		return "function_error"
	case InitError:
		return "init_error"
	case Timeout:
		return "timeout"
	case Crash:
		return "crash"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is the outcome of one invocation.
type Result struct {
	Outcome   Outcome
	RequestID string
	// Payload is the function's response (Success only), byte for byte.
	Payload []byte
	// Error describes every outcome but Success.
	Error *ErrorPayload
	// Duration runs from the event's hand-out to the answer (or the kill).
	Duration time.Duration
	// InitDuration is the cold start's init phase; zero on a warm environment.
	InitDuration time.Duration
	// PID is the process that ran the invocation (0 if none took it).
	PID int
}

// Err returns nil for Success and an *InvokeError otherwise.
func (r Result) Err() error {
	if r.Outcome == Success {
		return nil
	}
	return &InvokeError{Outcome: r.Outcome, RequestID: r.RequestID, Payload: r.Error}
}

// InvokeError is a failed invocation as an error value.
type InvokeError struct {
	Outcome   Outcome
	RequestID string
	Payload   *ErrorPayload
}

func (e *InvokeError) Error() string {
	msg := "invocation " + e.RequestID + ": " + e.Outcome.String()
	if e.Payload != nil {
		msg += ": " + e.Payload.Error()
	}
	return msg
}

// ErrClosed is returned by Invoke after Close.
var ErrClosed = errors.New("lambdaruntime: runtime closed")

// ReservedEnvError reports a function environment variable Lambda reserves.
type ReservedEnvError struct{ Key string }

func (e *ReservedEnvError) Error() string {
	return "lambdaruntime: environment variable " + e.Key + " is reserved by Lambda"
}

// reservedKeys are the variables Lambda sets itself and refuses in a function's configuration.
var reservedKeys = map[string]bool{
	"_HANDLER": true, "_X_AMZN_TRACE_ID": true, "AWS_DEFAULT_REGION": true, "AWS_REGION": true,
	"AWS_EXECUTION_ENV": true, "AWS_LAMBDA_FUNCTION_NAME": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true,
	"AWS_LAMBDA_FUNCTION_VERSION": true, "AWS_LAMBDA_INITIALIZATION_TYPE": true,
	"AWS_LAMBDA_LOG_GROUP_NAME": true, "AWS_LAMBDA_LOG_STREAM_NAME": true, "AWS_ACCESS_KEY": true,
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"AWS_LAMBDA_RUNTIME_API": true, "LAMBDA_TASK_ROOT": true, "LAMBDA_RUNTIME_DIR": true,
}

// Runtime runs one function: a pool of execution environments, each a child process with its own
// Runtime API server. It is safe for concurrent use.
type Runtime struct {
	fn   Function
	opts Options
	arn  string
	log  *slog.Logger

	mu        sync.Mutex
	closed    bool
	instances map[*instance]bool
	idle      []*instance   // parked in invocation/next, not reserved
	changed   chan struct{} // closed and replaced when idle or instances change
	seq       int
	wg        sync.WaitGroup // instance supervisors
	outMu     sync.Mutex     // serializes lines written to Options.Output
}

// New checks fn and returns a runtime for it. No process starts until the first Invoke.
func New(fn Function, opts *Options) (*Runtime, error) {
	if fn.Name == "" {
		return nil, errors.New("lambdaruntime: Function.Name is required")
	}
	if fn.Bootstrap == "" {
		return nil, fmt.Errorf("lambdaruntime: function %s: Bootstrap is required", fn.Name)
	}
	abs, err := filepath.Abs(fn.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("lambdaruntime: function %s: %w", fn.Name, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("lambdaruntime: function %s: bootstrap: %w", fn.Name, err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("lambdaruntime: function %s: bootstrap %s is not an executable file", fn.Name, abs)
	}
	fn.Bootstrap = abs
	for k := range fn.Env {
		if reservedKeys[k] {
			return nil, &ReservedEnvError{Key: k}
		}
	}
	if fn.Timeout <= 0 {
		fn.Timeout = DefaultTimeout
	}
	if fn.MemoryMB <= 0 {
		fn.MemoryMB = DefaultMemoryMB
	}
	if fn.MaxInstances <= 0 {
		fn.MaxInstances = 1
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Region = cmp.Or(o.Region, DefaultRegion)
	o.AccountID = cmp.Or(o.AccountID, DefaultAccountID)
	if o.AccessKeyID == "" && o.Endpoint != "" {
		o.AccessKeyID, o.SecretAccessKey = "test", "test"
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.Output == nil {
		o.Output = os.Stderr
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runtime{
		fn:        fn,
		opts:      o,
		arn:       "arn:aws:lambda:" + o.Region + ":" + o.AccountID + ":function:" + fn.Name,
		log:       logger.With("function", fn.Name),
		instances: map[*instance]bool{},
		changed:   make(chan struct{}),
	}, nil
}

// Function returns the function as the runtime runs it (defaults applied).
func (r *Runtime) Function() Function { return r.fn }

// ARN returns the function ARN the runtime reports in Lambda-Runtime-Invoked-Function-Arn.
func (r *Runtime) ARN() string { return r.arn }

// Instances returns the number of live execution environments.
func (r *Runtime) Instances() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.instances)
}

// PIDs returns the process ids of the live execution environments, sorted.
func (r *Runtime) PIDs() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pids []int
	for in := range r.instances {
		if pid := in.pid(); pid > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// Invoke runs one invocation with payload as the event, as a synchronous Lambda invoke does. It waits
// for a free execution environment (starting one when fewer than MaxInstances run). The returned
// error is non-nil only when the invocation could not run to an outcome: ctx ended (the environment
// running it is killed), the runtime was closed, or a process could not be started.
func (r *Runtime) Invoke(ctx context.Context, payload []byte) (Result, error) {
	inv := newInvocation(payload, r.fn.Timeout)
	for {
		in, cold, err := r.acquire(ctx)
		if err != nil {
			return Result{RequestID: inv.id}, err
		}
		var initDur time.Duration
		if cold {
			t0 := time.Now()
			errPay, err := in.api.waitReady(ctx, in.exited, r.opts.InitTimeout)
			initDur = time.Since(t0)
			if err != nil { // ctx ended during init
				r.discard(in, "invoke cancelled during init")
				return Result{RequestID: inv.id}, err
			}
			if errPay != nil {
				r.log.Warn("init failed", "error_type", errPay.Type, "error", errPay.Message, "pid", in.pid())
				pid := in.pid()
				r.discard(in, "init error")
				if r.isClosed() {
					return Result{RequestID: inv.id}, ErrClosed
				}
				return Result{Outcome: InitError, RequestID: inv.id, Error: errPay, InitDuration: initDur, PID: pid}, nil
			}
		}
		res, err := r.run(ctx, in, inv)
		if errors.Is(err, errNotStarted) {
			continue // the environment died while idle: take another one
		}
		res.InitDuration = initDur
		return res, err
	}
}

// run hands inv to the reserved environment in and waits for its outcome.
func (r *Runtime) run(ctx context.Context, in *instance, inv *invocation) (Result, error) {
	r.mu.Lock()
	in.current = inv // before the hand-out: the runtime may answer and park again at once
	r.mu.Unlock()
	select {
	case in.api.handout <- inv:
	case <-in.exited:
		r.discard(in, "exited while idle")
		if r.isClosed() {
			return Result{RequestID: inv.id}, ErrClosed
		}
		return Result{}, errNotStarted
	case <-ctx.Done():
		r.release(in)
		return Result{RequestID: inv.id}, ctx.Err()
	}
	<-inv.started // closed by the handler right after it received inv
	pid := in.pid()
	if r.opts.OnStart != nil {
		r.opts.OnStart(inv.id, pid)
	}
	res := Result{RequestID: inv.id, PID: pid}
	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()
	select {
	case <-inv.done:
	case <-in.exited:
		select {
		case <-inv.done: // answered, then exited: the answer stands
		default:
			in.api.abandon(inv)
			r.discard(in, "exited during invocation")
			if r.isClosed() {
				return res, ErrClosed
			}
			res.Outcome, res.Duration = Crash, time.Since(inv.deadline.Add(-inv.timeout))
			res.Error = &ErrorPayload{Type: ErrorTypeExit, Message: "RequestId: " + inv.id + " Error: Runtime exited with error: " + in.exitStatus()}
			r.log.Warn("environment exited during invocation", "request_id", inv.id, "pid", pid, "status", in.exitStatus())
			return res, nil
		}
	case <-timer.C:
		if in.api.abandon(inv) {
			r.discard(in, "timeout")
			res.Outcome, res.Duration = Timeout, inv.timeout
			res.Error = &ErrorPayload{Type: ErrorTypeTimeout, Message: fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, inv.timeout.Seconds())}
			r.log.Warn("invocation timed out; environment killed", "request_id", inv.id, "pid", pid, "timeout", inv.timeout.String())
			return res, nil
		}
		<-inv.done // answered just in time
	case <-ctx.Done():
		if in.api.abandon(inv) {
			r.discard(in, "invoke cancelled")
			return res, ctx.Err()
		}
		<-inv.done
	}
	res.Duration = inv.answered.Sub(inv.deadline.Add(-inv.timeout))
	if inv.errPay != nil {
		res.Outcome, res.Error = FunctionError, inv.errPay
	} else {
		res.Outcome, res.Payload = Success, inv.response
	}
	// The environment stays; it is free again when it asks for its next event. If it does not by
	// the deadline, Lambda would time it out: kill it.
	go r.watchRelease(in, inv)
	return res, nil
}

// watchRelease kills in if it does not ask for its next event before inv's deadline.
func (r *Runtime) watchRelease(in *instance, inv *invocation) {
	t := time.NewTimer(time.Until(inv.deadline))
	defer t.Stop()
	select {
	case <-inv.released:
	case <-in.exited:
		r.discard(in, "exited after answering")
	case <-t.C:
		r.log.Warn("environment kept running after its answer until the deadline; killed", "request_id", inv.id, "pid", in.pid())
		r.discard(in, "deadline after answer")
	}
}

// acquire returns an idle environment, or starts one (cold) when fewer than MaxInstances run, or
// waits for one to become idle.
func (r *Runtime) acquire(ctx context.Context) (*instance, bool, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, false, ErrClosed
		}
		if n := len(r.idle); n > 0 {
			in := r.idle[n-1] // most recently used: warm
			r.idle = r.idle[:n-1]
			in.reserved, in.current = true, nil
			r.mu.Unlock()
			return in, false, nil
		}
		if len(r.instances) < r.fn.MaxInstances {
			r.seq++
			in := &instance{rt: r, id: r.seq, reserved: true, exited: make(chan struct{})}
			r.instances[in] = true
			r.mu.Unlock()
			if err := in.start(); err != nil {
				r.discard(in, "start failed")
				return nil, false, err
			}
			return in, true, nil
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// parked is called when in's runtime parks in invocation/next: in is idle unless reserved.
func (r *Runtime) parked(in *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if in.reserved {
		// Reserved by an invoker that has not handed its event out yet (a cold start finishing init,
		// or a runtime repeating invocation/next): it stays with that invoker. Reserved by an
		// invocation that is answered: the environment is free again.
		if in.current == nil || !isDone(in.current) {
			return
		}
		in.reserved = false
	}
	if !r.instances[in] {
		return
	}
	for _, x := range r.idle {
		if x == in {
			return
		}
	}
	r.idle = append(r.idle, in)
	r.signalLocked()
}

// release returns a reserved environment that was not used to the idle list.
func (r *Runtime) release(in *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in.reserved, in.current = false, nil
	if r.instances[in] {
		r.idle = append(r.idle, in)
		r.signalLocked()
	}
}

// discard forgets in and kills it (if it still runs), waiting until it is reaped.
func (r *Runtime) discard(in *instance, why string) {
	if r.forget(in) {
		r.log.Debug("environment discarded", "instance", in.id, "pid", in.pid(), "reason", why)
	}
	in.kill()
}

// forget removes in from the pool. It reports whether in was still there.
func (r *Runtime) forget(in *instance) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, known := r.instances[in]
	delete(r.instances, in)
	for i, x := range r.idle {
		if x == in {
			r.idle = append(r.idle[:i], r.idle[i+1:]...)
			break
		}
	}
	r.signalLocked()
	return known
}

func isDone(inv *invocation) bool {
	select {
	case <-inv.done:
		return true
	default:
		return false
	}
}

func (r *Runtime) signalLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close kills every execution environment (the whole process group of each) and waits until they
// are gone. Invocations in progress end with ErrClosed.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	all := make([]*instance, 0, len(r.instances))
	for in := range r.instances {
		all = append(all, in)
	}
	r.instances = map[*instance]bool{}
	r.idle = nil
	r.signalLocked()
	r.mu.Unlock()
	for _, in := range all {
		in.kill()
	}
	r.wg.Wait()
	return nil
}

// newRequestID returns a random UUID (version 4), the shape of Lambda request ids.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newTraceID returns an X-Ray trace header in the shape Lambda passes (not sampled).
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), h[:24], h[24:40])
}
