package lambdaruntime_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/internal/procgroup"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// probe returns the executable of testdata/probe.
func probe(t *testing.T) string { return awstest.Build(t, "testdata/probe") }

func newRuntime(t *testing.T, fn lambdaruntime.Function, opts *lambdaruntime.Options) *lambdaruntime.Runtime {
	t.Helper()
	fn.Name = cmp.Or(fn.Name, "probe")
	fn.Bootstrap = probe(t)
	if opts == nil {
		opts = &lambdaruntime.Options{}
	}
	if opts.Output == nil {
		opts.Output = &awstest.SyncBuffer{}
	}
	rt, err := lambdaruntime.New(fn, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt
}

func invoke(t *testing.T, rt *lambdaruntime.Runtime, event any) lambdaruntime.Result {
	t.Helper()
	payload, err := json.Marshal(event)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := rt.Invoke(ctx, payload)
	require.NoError(t, err)
	return res
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return procgroup.Gone(pid) }, 10*time.Second, 20*time.Millisecond, "process %d still runs", pid)
}

type echo struct {
	PID         int               `json:"pid"`
	RequestID   string            `json:"request_id"`
	FunctionARN string            `json:"function_arn"`
	TraceID     string            `json:"trace_id"`
	DeadlineMS  int64             `json:"deadline_ms"`
	Env         map[string]string `json:"env"`
}

func TestInvokeGivesTheFunctionLambdasEnvironment(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{
		Name: "env-fn", Timeout: 9 * time.Second, MemoryMB: 512,
		Env: map[string]string{"JOBKIT_QUEUE_URL": "http://queue", "AWS_ENDPOINT_URL_SQS": "http://sqs"},
	}, &lambdaruntime.Options{Region: "eu-west-1", Endpoint: "http://127.0.0.1:4566", ExtraEnv: map[string]string{"EXTRA": "1"}})

	before := time.Now()
	res := invoke(t, rt, map[string]string{"action": "echo"})
	require.Equal(t, lambdaruntime.Success, res.Outcome, "%+v", res.Error)
	var got echo
	require.NoError(t, json.Unmarshal(res.Payload, &got))

	require.Equal(t, res.RequestID, got.RequestID)
	require.Equal(t, res.PID, got.PID)
	require.Equal(t, "arn:aws:lambda:eu-west-1:123456789012:function:env-fn", got.FunctionARN)
	require.Equal(t, rt.ARN(), got.FunctionARN)
	require.Contains(t, got.TraceID, "Root=1-")
	deadline := time.UnixMilli(got.DeadlineMS)
	require.True(t, deadline.After(before.Add(8*time.Second)) && deadline.Before(time.Now().Add(9*time.Second+time.Second)),
		"deadline %v not about 9 s after the invoke", deadline)

	env := got.Env
	require.True(t, strings.HasPrefix(env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:"), env["AWS_LAMBDA_RUNTIME_API"])
	delete(env, "AWS_LAMBDA_RUNTIME_API")
	require.Regexp(t, `^\d{4}/\d{2}/\d{2}/\[\$LATEST\][0-9a-f]{32}$`, env["AWS_LAMBDA_LOG_STREAM_NAME"])
	delete(env, "AWS_LAMBDA_LOG_STREAM_NAME")
	require.NotEmpty(t, env["PATH"])
	delete(env, "PATH")
	delete(env, "_X_AMZN_TRACE_ID") // set by aws-lambda-go per invocation
	dir := filepath.Dir(probe(t))
	// Exactly these: nothing leaks from the host (AWS_CA_BUNDLE, HOME, profiles, ...).
	require.Equal(t, map[string]string{
		"_HANDLER":                        "bootstrap",
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_DEFAULT_REGION":              "eu-west-1",
		"AWS_ENDPOINT_URL":                "http://127.0.0.1:4566",
		"AWS_ENDPOINT_URL_SQS":            "http://sqs",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
		"AWS_LAMBDA_FUNCTION_NAME":        "env-fn",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     "9",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/env-fn",
		"AWS_REGION":                      "eu-west-1",
		"AWS_SECRET_ACCESS_KEY":           "test",
		"EXTRA":                           "1",
		"JOBKIT_QUEUE_URL":                "http://queue",
		"LAMBDA_RUNTIME_DIR":              dir,
		"LAMBDA_TASK_ROOT":                dir,
		"LANG":                            "en_US.UTF-8",
		"TZ":                              ":UTC",
	}, env)
}

func TestNewRejectsReservedVariables(t *testing.T) {
	t.Parallel()
	_, err := lambdaruntime.New(lambdaruntime.Function{Name: "f", Bootstrap: probe(t), Env: map[string]string{"AWS_REGION": "x"}}, nil)
	var reserved *lambdaruntime.ReservedEnvError
	require.ErrorAs(t, err, &reserved)
	require.Equal(t, "AWS_REGION", reserved.Key)

	_, err = lambdaruntime.New(lambdaruntime.Function{Name: "f", Bootstrap: filepath.Join(t.TempDir(), "missing")}, nil)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWarmEnvironmentIsReused(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	first := invoke(t, rt, map[string]string{"action": "count"})
	second := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, "1", string(first.Payload))
	require.Equal(t, "2", string(second.Payload))
	require.Equal(t, first.PID, second.PID)
	require.Positive(t, first.InitDuration, "the first invocation is a cold start")
	require.Zero(t, second.InitDuration, "the second invocation is warm")
	require.NotEqual(t, first.RequestID, second.RequestID)
}

func TestRawResponseBytesArePassedThrough(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	res := invoke(t, rt, map[string]string{"action": "raw", "body": "not json {"})
	require.Equal(t, lambdaruntime.Success, res.Outcome)
	require.Equal(t, "not json {", string(res.Payload))
}

func TestFunctionErrorKeepsTheEnvironment(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	res := invoke(t, rt, map[string]string{"action": "error", "message": "bad input"})
	require.Equal(t, lambdaruntime.FunctionError, res.Outcome)
	require.Equal(t, "errorString", res.Error.Type)
	require.Equal(t, "bad input", res.Error.Message)
	var invErr *lambdaruntime.InvokeError
	require.ErrorAs(t, res.Err(), &invErr)
	require.Equal(t, lambdaruntime.FunctionError, invErr.Outcome)

	again := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, "2", string(again.Payload), "same process, second event")
	require.Equal(t, res.PID, again.PID)
}

func TestPanicIsAFunctionErrorAndTheNextInvokeIsCold(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	res := invoke(t, rt, map[string]string{"action": "panic"})
	require.Equal(t, lambdaruntime.FunctionError, res.Outcome)
	require.Contains(t, res.Error.Message, "probe panics")
	requireGone(t, res.PID) // aws-lambda-go exits after reporting a panic

	next := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, lambdaruntime.Success, next.Outcome)
	require.Equal(t, "1", string(next.Payload))
	require.NotEqual(t, res.PID, next.PID)
	require.Positive(t, next.InitDuration)
}

func TestTimeoutKillsTheProcessGroupAndTheNextInvokeIsCold(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{Timeout: time.Second}, nil)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res := invoke(t, rt, map[string]any{"action": "sleep", "ms": 120_000, "child_pid_file": pidFile})
	require.Equal(t, lambdaruntime.Timeout, res.Outcome)
	require.Equal(t, lambdaruntime.ErrorTypeTimeout, res.Error.Type)
	require.Contains(t, res.Error.Message, "Task timed out after 1.00 seconds")
	require.Equal(t, time.Second, res.Duration)

	raw, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(string(raw))
	require.NoError(t, err)
	requireGone(t, res.PID)
	requireGone(t, child) // the grandchild went with its process group
	require.Zero(t, rt.Instances())

	next := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, lambdaruntime.Success, next.Outcome)
	require.Equal(t, "1", string(next.Payload), "a fresh process")
	require.NotEqual(t, res.PID, next.PID)
}

func TestCrashMidInvocation(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	res := invoke(t, rt, map[string]any{"action": "exit", "code": 3})
	require.Equal(t, lambdaruntime.Crash, res.Outcome)
	require.Equal(t, lambdaruntime.ErrorTypeExit, res.Error.Type)
	require.Contains(t, res.Error.Message, "exit status 3")
	requireGone(t, res.PID)

	next := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, lambdaruntime.Success, next.Outcome)
	require.Equal(t, "1", string(next.Payload))
}

func TestResponseTooLargeIsAFunctionError(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{}, nil)
	res := invoke(t, rt, map[string]any{"action": "big", "bytes": lambdaruntime.MaxResponseSize + 1})
	require.Equal(t, lambdaruntime.FunctionError, res.Outcome)
	require.Equal(t, lambdaruntime.ErrorTypeResponseTooLarge, res.Error.Type)
}

func TestInitErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode, wantType string
	}{
		{"init-error", "Probe.InitFailed"},           // posted to init/error
		{"exit", lambdaruntime.ErrorTypeExit},        // exits before asking for an event
		{"hang", lambdaruntime.ErrorTypeInitTimeout}, // never asks for an event
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, lambdaruntime.Function{Env: map[string]string{"PROBE_INIT": tc.mode}},
				&lambdaruntime.Options{InitTimeout: 2 * time.Second})
			res := invoke(t, rt, map[string]string{"action": "count"})
			require.Equal(t, lambdaruntime.InitError, res.Outcome)
			require.Equal(t, tc.wantType, res.Error.Type)
			require.Positive(t, res.PID)
			requireGone(t, res.PID)
			require.Zero(t, rt.Instances())
			// Every invoke retries the init, as Lambda does.
			again := invoke(t, rt, map[string]string{"action": "count"})
			require.Equal(t, lambdaruntime.InitError, again.Outcome)
			require.NotEqual(t, res.PID, again.PID)
		})
	}
}

func TestConcurrencyIsBoundedByMaxInstances(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{MaxInstances: 2, Timeout: 30 * time.Second}, nil)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		pids = map[int]int{}
	)
	for range 6 {
		wg.Go(func() {
			res := invoke(t, rt, map[string]any{"action": "sleep", "ms": 300})
			require.Equal(t, lambdaruntime.Success, res.Outcome)
			mu.Lock()
			pids[res.PID]++
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, pids, 2, "six overlapping invokes share exactly two environments")
	got := rt.PIDs()
	var want []int
	for pid := range pids {
		want = append(want, pid)
	}
	sort.Ints(want)
	require.Equal(t, want, got)
}

func TestCancelledInvokeKillsItsEnvironment(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, lambdaruntime.Function{Timeout: time.Minute}, nil)
	warm := invoke(t, rt, map[string]string{"action": "count"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	_, err := rt.Invoke(ctx, []byte(`{"action":"sleep","ms":60000}`))
	require.ErrorIs(t, err, context.Canceled)
	requireGone(t, warm.PID)
}

func TestCloseStopsEverything(t *testing.T) {
	t.Parallel()
	fn := lambdaruntime.Function{Name: "closing", Bootstrap: probe(t), Timeout: time.Minute, MaxInstances: 2}
	rt, err := lambdaruntime.New(fn, &lambdaruntime.Options{Output: &awstest.SyncBuffer{}})
	require.NoError(t, err)
	warm := invoke(t, rt, map[string]string{"action": "count"})

	errs := make(chan error, 1)
	go func() {
		_, err := rt.Invoke(context.Background(), []byte(`{"action":"sleep","ms":60000}`))
		errs <- err
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, rt.Close())
	require.ErrorIs(t, <-errs, lambdaruntime.ErrClosed)
	requireGone(t, warm.PID)
	require.Empty(t, rt.PIDs())
	_, err = rt.Invoke(context.Background(), []byte(`{}`))
	require.ErrorIs(t, err, lambdaruntime.ErrClosed)
}

func TestFunctionOutputReachesTheWriter(t *testing.T) {
	t.Parallel()
	out := &awstest.SyncBuffer{}
	rt := newRuntime(t, lambdaruntime.Function{}, &lambdaruntime.Options{Output: out})
	res := invoke(t, rt, map[string]string{"action": "error", "message": "visible in the log"})
	require.Equal(t, lambdaruntime.FunctionError, res.Outcome)
	require.NoError(t, rt.Close())
	require.Contains(t, out.String(), "visible in the log") // aws-lambda-go logs the error payload
}

// OnStart names the process working on each invocation, while it works: a process killed from
// there crashes that invocation, and the next one gets a new environment.
func TestOnStartNamesTheWorkingProcess(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var started []string
	var pids []int
	kill := false
	rt := newRuntime(t, lambdaruntime.Function{Timeout: time.Minute}, &lambdaruntime.Options{
		OnStart: func(requestID string, pid int) {
			mu.Lock()
			defer mu.Unlock()
			started, pids = append(started, requestID), append(pids, pid)
			if kill {
				p, err := os.FindProcess(pid)
				if err == nil {
					_ = p.Kill()
				}
			}
		},
	})
	res := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, lambdaruntime.Success, res.Outcome)
	mu.Lock()
	require.Equal(t, []string{res.RequestID}, started)
	require.Equal(t, []int{res.PID}, pids)
	kill = true
	mu.Unlock()

	res = invoke(t, rt, map[string]any{"action": "sleep", "ms": 30000})
	require.Equal(t, lambdaruntime.Crash, res.Outcome, "%+v", res.Error)
	require.Equal(t, lambdaruntime.ErrorTypeExit, res.Error.Type)
	requireGone(t, res.PID)

	mu.Lock()
	kill = false
	mu.Unlock()
	next := invoke(t, rt, map[string]string{"action": "count"})
	require.Equal(t, lambdaruntime.Success, next.Outcome)
	require.NotEqual(t, res.PID, next.PID)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{started[0], res.RequestID, next.RequestID}, started)
}
