package devstack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// The Lambda API's Invoke, for the functions of the deployment: a function that invokes another
// (CDK's Provider framework invokes your onEvent handler so) reaches this server through
// AWS_ENDPOINT_URL_LAMBDA, which every function's environment names, and the invoked function
// runs in its runtime on this machine. POST /2015-03-31/functions/{FunctionName}/invocations with
// X-Amz-Invocation-Type RequestResponse (default), Event or DryRun, as the API reference has it:
// 200 with the function's response (X-Amz-Function-Error: Unhandled when it failed), 202, 204;
// an unknown function is a 404 ResourceNotFoundException.

// envLambdaEndpoint is the Lambda API's endpoint in a function's environment: the SDKs read it
// before AWS_ENDPOINT_URL.
const envLambdaEndpoint = "AWS_ENDPOINT_URL_LAMBDA"

// maxInvokeInstances caps the environments of a function that only Invoke runs (no event source),
// when it reserves no concurrency.
const maxInvokeInstances = 10

// Invoke's payload limits (the Lambda quotas page): 6 MB for a synchronous invocation, 1 MB for an
// asynchronous one.
const (
	maxSyncPayload  = 6 * 1024 * 1024
	maxAsyncPayload = 1024 * 1024
)

// lambdaAPI serves Invoke.
type lambdaAPI struct {
	ln    net.Listener
	srv   *http.Server
	url   string
	d     *deploy.Deployment
	start func(fn deploy.Function) (*lambdaruntime.Runtime, error) // a runtime for fn, made once

	mu       sync.Mutex
	closed   bool
	runtimes map[string]*lambdaruntime.Runtime // by function name: the stack's, and those made here
	own      map[string]*lambdaruntime.Runtime // made here, closed by close
	async    sync.WaitGroup                    // Event invocations
}

func newLambdaAPI(d *deploy.Deployment, start func(deploy.Function) (*lambdaruntime.Runtime, error)) (*lambdaAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("devstack: Lambda API: %w", err)
	}
	a := &lambdaAPI{ln: ln, url: "http://" + ln.Addr().String(), d: d, start: start,
		runtimes: map[string]*lambdaruntime.Runtime{}, own: map[string]*lambdaruntime.Runtime{}}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// use makes rt the runtime Invoke runs function name in (the stack's own, shared with its event
// sources); one made here before (a custom resource's provider invoked it) is closed.
func (a *lambdaAPI) use(name string, rt *lambdaruntime.Runtime) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.own[name]; old != nil {
		_ = old.Close()
		delete(a.own, name)
	}
	a.runtimes[name] = rt
}

var errClosed = errors.New("the stack is stopping")

func (a *lambdaAPI) runtime(fn deploy.Function) (*lambdaruntime.Runtime, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errClosed
	}
	if rt := a.runtimes[fn.Name]; rt != nil {
		return rt, nil
	}
	rt, err := a.start(fn)
	if err != nil {
		return nil, err
	}
	a.runtimes[fn.Name] = rt
	a.own[fn.Name] = rt
	return rt, nil
}

// goAsync runs an Event invocation in the background, unless the API is closing.
func (a *lambdaAPI) goAsync(f func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.async.Go(f)
	return true
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	kind := "User"
	if status >= 500 {
		kind = "Server"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": kind, "message": msg})
}

func (a *lambdaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if !ok || !ok2 || r.Method != http.MethodPost {
		apiError(w, http.StatusNotFound, "UnknownOperationException", "the offline Lambda API serves Invoke only")
		return
	}
	name, err := url.PathUnescape(name)
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
		return
	}
	// The offline stack has one version of each function: $LATEST, by name, ARN or qualifier.
	name = strings.TrimSuffix(name, ":$LATEST")
	if q := r.URL.Query().Get("Qualifier"); q != "" && q != "$LATEST" {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name+":"+q+" (offline, functions have $LATEST only)")
		return
	}
	fn := a.d.FunctionByName(name)
	if fn == nil {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	typ := cmp.Or(r.Header.Get("X-Amz-Invocation-Type"), "RequestResponse")
	limit := maxSyncPayload
	switch typ {
	case "RequestResponse", "DryRun":
	case "Event":
		limit = maxAsyncPayload
	default:
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "X-Amz-Invocation-Type must be RequestResponse, Event or DryRun, not "+typ)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	switch {
	case err != nil:
		apiError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	case len(payload) > limit:
		apiError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", fmt.Sprintf("Request must be smaller than %d bytes for the %s invocation type", limit, typ))
		return
	case len(payload) == 0:
		payload = []byte("{}")
	case !json.Valid(payload):
		apiError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	if fn.Unrunnable != "" {
		apiError(w, http.StatusBadGateway, "ServiceException", "function "+fn.Name+" cannot run offline: "+fn.Unrunnable)
		return
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if typ == "DryRun" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rt, err := a.runtime(*fn)
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "ServiceException", err.Error())
		return
	}
	if typ == "Event" {
		// No retries and no destinations offline: an Event invocation runs once.
		if !a.goAsync(func() { _, _ = rt.Invoke(context.Background(), payload) }) {
			apiError(w, http.StatusServiceUnavailable, "ServiceException", errClosed.Error())
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	res, err := rt.Invoke(r.Context(), payload)
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "ServiceException", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	body := res.Payload
	if res.Outcome != lambdaruntime.Success {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		body, _ = json.Marshal(res.Error)
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// close stops the server, closes the runtimes made here (their Event invocations end with them;
// the stack closes its own before) and waits for the Event invocations.
func (a *lambdaAPI) close() error {
	a.mu.Lock()
	a.closed = true
	own := a.own
	a.own = map[string]*lambdaruntime.Runtime{}
	a.mu.Unlock()
	_ = a.srv.Close()
	var first error
	for _, rt := range own {
		if err := rt.Close(); err != nil && first == nil {
			first = err
		}
	}
	a.async.Wait()
	return first
}

// invokeInstances is how many environments a function that Invoke alone runs may have.
func invokeInstances(fn deploy.Function) int {
	if fn.ReservedConcurrency > 0 {
		return fn.ReservedConcurrency
	}
	return maxInvokeInstances
}

// LambdaEndpoint is the endpoint of the Lambda API's Invoke for the stack's functions, as their
// environments name it (AWS_ENDPOINT_URL_LAMBDA): a program or the AWS CLI
// (aws lambda invoke --endpoint-url) invokes a function of the stack there.
func (s *Stack) LambdaEndpoint() string { return s.lambda.url }
