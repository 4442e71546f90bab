// Command probe is a Lambda function built for the runtime's tests. The event says what to do:
//
//	{"action":"echo"}                          report what the function sees (env, context, pid)
//	{"action":"error","message":"m"}           return an error
//	{"action":"panic"}                         panic (aws-lambda-go reports it, then exits)
//	{"action":"exit","code":3}                 exit mid-invocation without answering
//	{"action":"sleep","ms":N,"child_pid_file":f} start a grandchild, write its pid to f, sleep N ms ignoring ctx
//	{"action":"raw","body":"..."}              answer with these exact bytes
//	{"action":"big","bytes":N}                 answer with N bytes
//	{"action":"count"}                         answer with how many events this process handled
//
// PROBE_INIT chooses how initialization goes: "" (normal), "init-error" (post init/error, exit),
// "exit" (exit before the first event), "hang" (never ask for an event).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Action       string `json:"action"`
	Message      string `json:"message"`
	Code         int    `json:"code"`
	MS           int    `json:"ms"`
	ChildPIDFile string `json:"child_pid_file"`
	Body         string `json:"body"`
	Bytes        int    `json:"bytes"`
}

var handled atomic.Int64

func handle(ctx context.Context, ev event) (io.Reader, error) {
	n := handled.Add(1)
	switch ev.Action {
	case "echo":
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		out, err := json.Marshal(map[string]any{
			"pid":          os.Getpid(),
			"request_id":   lc.AwsRequestID,
			"function_arn": lc.InvokedFunctionArn,
			"trace_id":     ctx.Value("x-amzn-trace-id"),
			"deadline_ms":  deadline.UnixMilli(),
			"env":          env,
		})
		return bytes.NewReader(out), err
	case "error":
		return nil, errors.New(ev.Message)
	case "panic":
		panic("probe panics")
	case "exit":
		os.Exit(ev.Code)
	case "sleep":
		if ev.ChildPIDFile != "" {
			child := exec.Command("sleep", "600")
			if err := child.Start(); err != nil {
				return nil, err
			}
			if err := os.WriteFile(ev.ChildPIDFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
				return nil, err
			}
		}
		time.Sleep(time.Duration(ev.MS) * time.Millisecond)
		return strings.NewReader(`"slept"`), nil
	case "raw":
		return strings.NewReader(ev.Body), nil
	case "big":
		return bytes.NewReader(bytes.Repeat([]byte("x"), ev.Bytes)), nil
	case "count":
		return strings.NewReader(strconv.FormatInt(n, 10)), nil
	}
	return nil, errors.New("probe: unknown action " + ev.Action)
}

func main() {
	switch os.Getenv("PROBE_INIT") {
	case "init-error":
		api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
		req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error",
			strings.NewReader(`{"errorType":"Probe.InitFailed","errorMessage":"probe cannot start"}`))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Probe.InitFailed")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	case "exit":
		os.Exit(2)
	case "hang":
		time.Sleep(time.Hour)
	}
	lambda.Start(handle)
}
