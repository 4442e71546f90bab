package devrun

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/inspect/console"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// DefaultConsoleAddr is where the dev programs serve the ops console: `jobkit console`'s default
// address.
const DefaultConsoleAddr = "127.0.0.1:7700"

// ServeConsole serves the ops console (jobkit console) over the queues of stack on addr ("" or
// "off": none) and says where; the stack need not be deployed yet (the page resolves the queues
// when asked). A port in use is noted, not fatal. The returned func stops it.
func ServeConsole(ctx context.Context, addr string, cfg aws.Config, stack string, note func(string)) func() {
	if addr == "" || addr == "off" {
		return func() {}
	}
	in := inspect.New(cfg)
	states := &stackStates{in: in, cfg: cfg, stack: stack}
	srv, err := console.New(ctx, in, console.Options{Target: inspect.Target{Stack: stack}, States: states, Jobs: states})
	if err != nil {
		note(fmt.Sprintf("dev: console: %v", err))
		return func() {}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		note(fmt.Sprintf("dev: no console: %v (pass --console HOST:PORT or off)", err))
		return func() {}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	note(fmt.Sprintf("dev: console at http://%s/ (queues, dead jobs, redrive, schedules, jobs by state, job status, cancel, retry)", ln.Addr()))
	return func() { _ = hs.Close() }
}

var _ console.JobLister = (*stackStates)(nil)

// stackStates reads and acts on job states in the state table the stack names in its
// JobkitStateTable output, found on first use: the console starts before the stack is deployed.
type stackStates struct {
	in    *inspect.Inspector
	cfg   aws.Config
	stack string

	mu     sync.Mutex
	table  *state.Table
	client *jobs.Client
}

// open finds the state table (once) and returns it with a Client that operates on its jobs.
func (s *stackStates) open(ctx context.Context) (*state.Table, *jobs.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table != nil {
		return s.table, s.client, nil
	}
	name, err := s.in.StackOutput(ctx, s.stack, contract.OutputStateTable)
	if err != nil {
		return nil, nil, err
	}
	if name == "" {
		return nil, nil, fmt.Errorf("the stack %s has no state table (yet)", s.stack)
	}
	t, err := state.New(dynamodb.NewFromConfig(s.cfg), name, &state.Options{ListJobs: true}) // a cancel moves its index entry
	if err != nil {
		return nil, nil, err
	}
	c, err := jobs.NewClient(sqs.NewFromConfig(s.cfg), jobs.ClientOptions{State: t, LongDelayer: s.in.ParkedJobs()})
	if err != nil {
		return nil, nil, err
	}
	s.table, s.client = t, c
	return t, c, nil
}

// JobStatus implements console.StatusReader.
func (s *stackStates) JobStatus(ctx context.Context, id string) (jobs.JobStatus, error) {
	t, _, err := s.open(ctx)
	if err != nil {
		return jobs.JobStatus{}, err
	}
	return t.JobStatus(ctx, id)
}

// Cancel implements console.JobOperator.
func (s *stackStates) Cancel(ctx context.Context, id string) (jobs.JobStatus, error) {
	_, c, err := s.open(ctx)
	if err != nil {
		return jobs.JobStatus{}, err
	}
	return c.Cancel(ctx, id)
}

// RetryNow implements console.JobOperator.
func (s *stackStates) RetryNow(ctx context.Context, id string) (jobs.JobStatus, error) {
	_, c, err := s.open(ctx)
	if err != nil {
		return jobs.JobStatus{}, err
	}
	return c.RetryNow(ctx, id)
}

// List implements console.JobLister.
func (s *stackStates) List(ctx context.Context, opts state.ListOptions) (state.JobPage, error) {
	t, _, err := s.open(ctx)
	if err != nil {
		return state.JobPage{}, err
	}
	return t.List(ctx, opts)
}
