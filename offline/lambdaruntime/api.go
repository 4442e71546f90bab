package lambdaruntime

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Runtime API paths and headers, as documented in
// https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html.
const (
	apiPrefix = "/2018-06-01/runtime/"

	HeaderRequestID          = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMS         = "Lambda-Runtime-Deadline-Ms"
	HeaderInvokedFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID            = "Lambda-Runtime-Trace-Id"
	HeaderFunctionErrorType  = "Lambda-Runtime-Function-Error-Type"
	headerFunctionErrorBody  = "Lambda-Runtime-Function-Error-Body" // trailer, base64 JSON (aws-lambda-go)
)

// MaxResponseSize is the largest synchronous invocation response Lambda accepts (6 MB).
const MaxResponseSize = 6 * 1024 * 1024

// Error types this package reports for failures that are not the function's own error payload.
// The names are the ones Lambda uses.
const (
	ErrorTypeTimeout          = "Sandbox.Timedout"
	ErrorTypeExit             = "Runtime.ExitError"
	ErrorTypeResponseTooLarge = "Function.ResponseSizeTooLarge"
	ErrorTypeNoResponse       = "Runtime.InvalidStateTransition" // the runtime asked for the next event without answering
	ErrorTypeInitTimeout      = "Runtime.InitTimeout"
	ErrorTypeUnhandled        = "Unhandled" // an error posted without a type
)

// ErrorPayload is the error document a runtime posts to invocation/{id}/error or init/error, and the
// one this package reports for timeouts and crashes.
type ErrorPayload struct {
	Type       string          `json:"errorType"`
	Message    string          `json:"errorMessage"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
}

// Error returns "Type: Message".
func (e *ErrorPayload) Error() string { return e.Type + ": " + e.Message }

// invocation is one event handed to one execution environment.
type invocation struct {
	id      string
	payload []byte
	traceID string
	timeout time.Duration

	started  chan struct{} // closed when invocation/next hands it out
	deadline time.Time     // set before started is closed

	done     chan struct{} // closed when the runtime answered (or it was abandoned)
	response []byte        // the response, when errPay is nil
	errPay   *ErrorPayload // the function error
	answered time.Time

	released chan struct{} // closed when the runtime asks for its next event after this one
}

func newInvocation(payload []byte, timeout time.Duration) *invocation {
	return &invocation{
		id:       newRequestID(),
		payload:  payload,
		traceID:  newTraceID(),
		timeout:  timeout,
		started:  make(chan struct{}),
		done:     make(chan struct{}),
		released: make(chan struct{}),
	}
}

// apiServer is the Runtime API of one execution environment. It is an http.Handler.
type apiServer struct {
	functionARN string
	maxResponse int
	now         func() time.Time

	handout chan *invocation // invocation/next receives from it
	closed  chan struct{}    // closed by close(): a parked invocation/next answers 500
	closeMu sync.Once

	onPark func() // called each time the runtime parks in invocation/next

	mu       sync.Mutex
	inited   bool          // invocation/next was called once
	ready    chan struct{} // closed on the first invocation/next
	initErr  *ErrorPayload // posted to init/error
	initDone chan struct{} // closed when init/error is posted
	current  *invocation   // handed out, not answered
	last     *invocation   // the most recent invocation handed out
	answered map[string]bool
}

func newAPIServer(functionARN string, onPark func()) *apiServer {
	return &apiServer{
		functionARN: functionARN,
		maxResponse: MaxResponseSize,
		now:         time.Now,
		handout:     make(chan *invocation),
		closed:      make(chan struct{}),
		onPark:      onPark,
		ready:       make(chan struct{}),
		initDone:    make(chan struct{}),
		answered:    map[string]bool{},
	}
}

// close makes a parked or later invocation/next answer 500 (the documented "container error": the
// runtime should exit).
func (s *apiServer) close() { s.closeMu.Do(func() { close(s.closed) }) }

// finish records the answer for inv if it is still the current invocation. It reports whether it did.
func (s *apiServer) finish(inv *invocation, response []byte, errPay *ErrorPayload) bool {
	return s.release(inv, func() {
		inv.response, inv.errPay, inv.answered = response, errPay, s.now()
		close(inv.done)
	})
}

// abandon takes inv away from the runtime (timeout, shutdown) unless it was answered first. It
// reports whether inv was still unanswered.
func (s *apiServer) abandon(inv *invocation) bool { return s.release(inv, nil) }

// release ends inv, if it is still the current invocation, and runs then (when not nil) before
// any other call can see inv ended. It reports whether inv was current.
func (s *apiServer) release(inv *invocation, then func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != inv {
		return false
	}
	s.current = nil
	s.answered[inv.id] = true
	if then != nil {
		then()
	}
	return true
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok {
		writeAPIError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
		return
	}
	switch {
	case path == "invocation/next":
		if r.Method != http.MethodGet {
			writeAPIError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use GET")
			return
		}
		s.next(w, r)
	case path == "init/error":
		if r.Method != http.MethodPost {
			writeAPIError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use POST")
			return
		}
		s.initError(w, r)
	case strings.HasPrefix(path, "invocation/"):
		rest := strings.TrimPrefix(path, "invocation/")
		id, verb, ok := strings.Cut(rest, "/")
		if !ok || id == "" || (verb != "response" && verb != "error") {
			writeAPIError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
			return
		}
		if r.Method != http.MethodPost {
			writeAPIError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use POST")
			return
		}
		if verb == "response" {
			s.response(w, r, id)
		} else {
			s.invocationError(w, r, id)
		}
	default:
		writeAPIError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
	}
}

// next parks the runtime until an invocation is handed out, then returns its event.
func (s *apiServer) next(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.current != nil {
		// The runtime asks for the next event without answering the current one: that invocation
		// fails, as it would on Lambda.
		inv := s.current
		s.mu.Unlock()
		s.finish(inv, nil, &ErrorPayload{Type: ErrorTypeNoResponse, Message: "the runtime requested the next invocation without answering " + inv.id})
		s.mu.Lock()
	}
	if s.last != nil {
		close(s.last.released)
		s.last = nil
	}
	if !s.inited {
		s.inited = true
		close(s.ready)
	}
	s.mu.Unlock()
	if s.onPark != nil {
		s.onPark()
	}

	var inv *invocation
	select {
	case inv = <-s.handout:
	case <-r.Context().Done():
		return
	case <-s.closed:
		writeAPIError(w, http.StatusInternalServerError, "Runtime.Shutdown", "the execution environment is shutting down")
		return
	}
	deadline := s.now().Add(inv.timeout)
	s.mu.Lock()
	inv.deadline = deadline
	s.current = inv
	s.last = inv
	s.mu.Unlock()
	close(inv.started)

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderRequestID, inv.id)
	h.Set(HeaderDeadlineMS, strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set(HeaderInvokedFunctionARN, s.functionARN)
	h.Set(HeaderTraceID, inv.traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload)
}

// lookup returns the current invocation if it has this id, or writes the documented error.
func (s *apiServer) lookup(w http.ResponseWriter, id string) *invocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != nil && s.current.id == id {
		return s.current
	}
	if s.answered[id] {
		writeAPIError(w, http.StatusForbidden, "InvalidStateTransition", "invocation "+id+" is already complete")
	} else {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequestID", "unknown request id "+id)
	}
	return nil
}

func (s *apiServer) response(w http.ResponseWriter, r *http.Request, id string) {
	inv := s.lookup(w, id)
	if inv == nil {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(s.maxResponse)+1))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequest", "read response: "+err.Error())
		return
	}
	if len(body) > s.maxResponse {
		s.finish(inv, nil, &ErrorPayload{
			Type:    ErrorTypeResponseTooLarge,
			Message: "Response payload size exceeded maximum allowed payload size (" + strconv.Itoa(s.maxResponse) + " bytes).",
		})
		writeAPIError(w, http.StatusRequestEntityTooLarge, ErrorTypeResponseTooLarge, "response larger than "+strconv.Itoa(s.maxResponse)+" bytes")
		return
	}
	// aws-lambda-go streams the response and, when the handler's reader fails midway, reports the
	// error in trailers instead.
	if typ := r.Trailer.Get(HeaderFunctionErrorType); typ != "" {
		errPay := &ErrorPayload{Type: typ}
		if raw, err := base64.StdEncoding.DecodeString(r.Trailer.Get(headerFunctionErrorBody)); err == nil {
			_ = json.Unmarshal(raw, errPay)
			errPay.Type = typ
		}
		s.finish(inv, nil, errPay)
		writeAccepted(w)
		return
	}
	if !s.finish(inv, body, nil) {
		writeAPIError(w, http.StatusForbidden, "InvalidStateTransition", "invocation "+id+" is already complete")
		return
	}
	writeAccepted(w)
}

func (s *apiServer) invocationError(w http.ResponseWriter, r *http.Request, id string) {
	inv := s.lookup(w, id)
	if inv == nil {
		return
	}
	errPay := readErrorPayload(r)
	if !s.finish(inv, nil, errPay) {
		writeAPIError(w, http.StatusForbidden, "InvalidStateTransition", "invocation "+id+" is already complete")
		return
	}
	writeAccepted(w)
}

func (s *apiServer) initError(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.inited || s.initErr != nil {
		s.mu.Unlock()
		writeAPIError(w, http.StatusForbidden, "InvalidStateTransition", "init/error is accepted only during initialization, once")
		return
	}
	s.mu.Unlock()
	errPay := readErrorPayload(r)
	s.mu.Lock()
	if s.inited || s.initErr != nil {
		s.mu.Unlock()
		writeAPIError(w, http.StatusForbidden, "InvalidStateTransition", "init/error is accepted only during initialization, once")
		return
	}
	s.initErr = errPay
	close(s.initDone)
	s.mu.Unlock()
	writeAccepted(w)
}

// readErrorPayload reads an error document. The type comes from the Lambda-Runtime-Function-Error-Type
// header when the body does not name one; a body that is not JSON becomes the message.
func readErrorPayload(r *http.Request) *ErrorPayload {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxResponseSize))
	errPay := &ErrorPayload{}
	if err := json.Unmarshal(body, errPay); err != nil {
		errPay = &ErrorPayload{Message: strings.TrimSpace(string(body))}
	}
	if errPay.Type == "" {
		errPay.Type = r.Header.Get(HeaderFunctionErrorType)
	}
	errPay.Type = cmp.Or(errPay.Type, ErrorTypeUnhandled)
	return errPay
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorPayload{Type: typ, Message: msg})
}

// waitReady waits for the first invocation/next (init done), an init/error, the end of the process
// or the init timeout.
func (s *apiServer) waitReady(ctx context.Context, exited <-chan struct{}, timeout time.Duration) (*ErrorPayload, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.ready:
		return nil, nil
	case <-s.initDone:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.initErr, nil
	case <-exited:
		select {
		case <-s.ready:
			return nil, nil
		case <-s.initDone:
			return s.initErr, nil
		default:
		}
		return &ErrorPayload{Type: ErrorTypeExit, Message: "Runtime exited during initialization"}, nil
	case <-t.C:
		return &ErrorPayload{Type: ErrorTypeInitTimeout, Message: "Init phase did not complete within " + timeout.String()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var errNotStarted = errors.New("lambdaruntime: environment ended before taking the invocation")
