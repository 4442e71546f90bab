// Package console is jobkit's ops console: a web page and JSON API over an [inspect.Inspector]
// that shows queues (refreshed live), dead-lettered jobs with their reasons and envelopes, and
// schedules with their next fire times, and redrives or purges dead jobs. `jobkit console` serves
// it; a program can mount [Server] on its own mux.
//
// It is safe by default. Every state-changing request (POST) must carry the per-process token
// (header X-Jobkit-Token, which the page's script reads from a meta tag) and be same-origin
// (Sec-Fetch-Site, else Origin against Host); a request whose Host is not a loopback name or one
// of Options.Hosts is refused, so a DNS-rebinding page cannot read the API either. In read-only
// mode the page shows no action and every action answers 403. Job data is untrusted input: the
// page is rendered with html/template, control characters, bidirectional overrides and bytes that
// are not UTF-8 are shown as visible escapes (inspect.Printable), bodies are cut in lists, and
// every response carries a Content-Security-Policy without inline script and
// X-Content-Type-Options: nosniff. Nothing renders the AWS configuration or a credential.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// TokenHeader is the request header that carries the per-process token on state-changing requests.
const TokenHeader = "X-Jobkit-Token"

// ContentSecurityPolicy is sent with every response: the page loads its script and style from the
// console itself, runs no inline script, and cannot be framed.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options configures a Server.
type Options struct {
	// Target names the queues the console shows (the CLI's --stack, --queue, --dlq).
	Target inspect.Target
	// ReadOnly hides every action on the page and refuses them with 403.
	ReadOnly bool
	// HideBodies leaves the jobs' bodies (their arguments: customer data, as a rule) out of the
	// page and the API: lists give their size only, a job's view no body or envelope. `jobkit
	// console --read-only` sets it unless --show-bodies.
	HideBodies bool
	// Secret, when set, must come with every request, whatever its route: as the password of
	// HTTP Basic authentication (any user name; a browser asks for it) or as
	// "Authorization: Bearer <secret>". It is compared in constant time; a request without it is
	// answered 401. Serve it over TLS (a reverse proxy) or an SSH tunnel: Basic authentication
	// sends the secret in the clear. `jobkit console` refuses to listen beyond loopback without one.
	Secret string
	// Token is the secret every state-changing request carries; "" makes a random one.
	Token string
	// Hosts are the host names (without port) the console answers to besides the loopback names
	// (localhost, 127.0.0.1, ::1): set it when it listens on another address.
	Hosts []string
	// StateTable names the DynamoDB table that holds job states (shown on the page).
	StateTable string
	// States reads job states by id (a *jobs/state.Table). nil means the job state table is not
	// deployed: the page says so instead of showing the status form.
	States StatusReader
	// Jobs acts on jobs by id (a *jobs.Client with State): the status panel's Cancel and Retry
	// now buttons. nil hides them.
	Jobs JobOperator
	// ScheduleGroup limits the schedules shown to one group; "" shows every group's.
	ScheduleGroup string
	// Refresh is how often the page refreshes queue statistics; 0 means 3 s.
	Refresh time.Duration
	// ListLimit is the most dead jobs a listing shows; 0 means 50.
	ListLimit int
	// Now returns the current time (tests); nil means time.Now.
	Now func() time.Time
}

// JobLister lists a queue's jobs in one state; jobs/state.Table implements it. When
// Options.States is one, the page lists the selected queue's jobs by state and /api/jobs answers.
type JobLister interface {
	List(ctx context.Context, opts state.ListOptions) (state.JobPage, error)
}

// StatusReader reads a job's state by id; jobs/state.Table implements it.
type StatusReader interface {
	JobStatus(ctx context.Context, id string) (jobs.JobStatus, error)
}

// JobOperator acts on one job by id; *jobs.Client implements it.
type JobOperator interface {
	Cancel(ctx context.Context, id string) (jobs.JobStatus, error)
	RetryNow(ctx context.Context, id string) (jobs.JobStatus, error)
}

// Server is the console's http.Handler. It is safe for concurrent use.
type Server struct {
	in    *inspect.Inspector
	o     Options
	token string
	mux   *http.ServeMux
	base  context.Context // redrives run on it, not on the request that started them
	tasks *tasks

	mu       sync.Mutex
	cached   []inspect.Queue
	cachedAt time.Time
	// The queues' pause states (URL -> paused), read at most every pauseEvery, and anew after a
	// pause or resume from the page.
	paused   map[string]bool
	pausedAt time.Time
	pauseGen int // bumped by a pause or resume: a read begun before it is not kept
}

// pauseEvery is how often the queue table reads the queues' pause states (a ListQueueTags each).
const pauseEvery = 15 * time.Second

// New returns a Server over in. Redrives it starts run until ctx ends.
func New(ctx context.Context, in *inspect.Inspector, o Options) (*Server, error) {
	if in == nil {
		return nil, errors.New("console: nil Inspector")
	}
	if o.Token == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("console: token: %w", err)
		}
		o.Token = hex.EncodeToString(b[:])
	}
	if o.Refresh <= 0 {
		o.Refresh = 3 * time.Second
	}
	if o.ListLimit <= 0 {
		o.ListLimit = 50
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{in: in, o: o, token: o.Token, mux: http.NewServeMux(), base: ctx, tasks: newTasks()}
	s.routes()
	return s, nil
}

// Token returns the per-process token state-changing requests carry in TokenHeader.
func (s *Server) Token() string { return s.token }

func (s *Server) routes() {
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS)))
	s.mux.HandleFunc("GET /api/queues", s.apiQueues)
	s.mux.HandleFunc("GET /api/metrics", s.apiMetrics)
	s.mux.HandleFunc("GET /api/dead", s.apiDead)
	s.mux.HandleFunc("GET /api/envelope", s.apiEnvelope)
	s.mux.HandleFunc("GET /api/schedules", s.apiSchedules)
	s.mux.HandleFunc("GET /api/status", s.apiStatus)
	s.mux.HandleFunc("GET /api/jobs", s.apiJobs)
	s.mux.HandleFunc("GET /api/tasks/{id}", s.apiTask)
	s.mux.HandleFunc("POST /api/redrive", s.action(s.apiRedrive))
	s.mux.HandleFunc("POST /api/purge", s.action(s.apiPurge))
	s.mux.HandleFunc("POST /api/jobs/{op}", s.action(s.apiJob))
	s.mux.HandleFunc("POST /api/schedules/{op}", s.action(s.apiSchedule))
	s.mux.HandleFunc("POST /api/queues/{op}", s.action(s.apiQueueOp))
}

// ServeHTTP sets the security headers, refuses foreign hosts and cross-site requests, and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if s.o.Secret != "" && !s.authenticated(r) {
		h.Set("WWW-Authenticate", `Basic realm="jobkit console", charset="UTF-8"`)
		writeError(w, http.StatusUnauthorized, "this console needs its secret (HTTP Basic password or Authorization: Bearer)")
		return
	}
	if !s.allowedHost(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "host %q is not this console's (start it with --host to allow it)", r.Host)
		return
	}
	if crossSite(r) && !(r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.RawQuery == "") {
		writeError(w, http.StatusForbidden, "cross-site request refused")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authenticated reports whether r carries Options.Secret (Basic password or Bearer token).
func (s *Server) authenticated(r *http.Request) bool {
	got, ok := "", false
	if _, pass, basic := r.BasicAuth(); basic {
		got, ok = pass, true
	} else if v, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		got, ok = v, true
	}
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Secret)) == 1
}

// allowedHost reports whether a request's Host names this console: a loopback name or an
// Options.Hosts entry. This defeats DNS rebinding (a foreign name resolving to 127.0.0.1).
func (s *Server) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range s.o.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// crossSite reports whether a browser says the request comes from another site or origin.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return true
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		return origin != "http://"+r.Host && origin != "https://"+r.Host
	}
	return false
}

// action guards a state-changing handler: read-only refuses it; otherwise it needs the token, a
// same-origin request (Origin or Sec-Fetch-Site present and same-origin) and a JSON body.
func (s *Server) action(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.o.ReadOnly {
			writeError(w, http.StatusForbidden, "the console is read-only")
			return
		}
		got := r.Header.Get(TokenHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			writeError(w, http.StatusForbidden, "missing or wrong %s", TokenHeader)
			return
		}
		if crossSite(r) {
			writeError(w, http.StatusForbidden, "cross-origin request refused")
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeError(w, http.StatusUnsupportedMediaType, "a JSON body is required")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		fn(w, r)
	}
}

// queues resolves the target's queues, caching them for 10 s (the page polls every few).
func (s *Server) queues(ctx context.Context) ([]inspect.Queue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached != nil && s.o.Now().Sub(s.cachedAt) < 10*time.Second {
		return s.cached, nil
	}
	qs, err := s.in.Resolve(ctx, s.o.Target)
	if err != nil {
		return nil, err
	}
	s.cached, s.cachedAt = qs, s.o.Now()
	return qs, nil
}

// queue returns the queue named name (its Name as Resolve gives it).
func (s *Server) queue(ctx context.Context, name string) (inspect.Queue, error) {
	qs, err := s.queues(ctx)
	if err != nil {
		return inspect.Queue{}, err
	}
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
	}
	return inspect.Queue{}, fmt.Errorf("%w: no queue %q", errUnknownQueue, name)
}

// queueWithDLQ is queue for an action on a queue's dead letters: a queue without a dead-letter
// queue is inspect.ErrNoDLQ.
func (s *Server) queueWithDLQ(ctx context.Context, name string) (inspect.Queue, error) {
	q, err := s.queue(ctx, name)
	if err == nil && q.DLQURL == "" {
		err = fmt.Errorf("%w: %s", inspect.ErrNoDLQ, name)
	}
	return q, err
}

var errUnknownQueue = errors.New("console: unknown queue")
