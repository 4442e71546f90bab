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
	srv, err := console.New(ctx, in, console.Options{Target: inspect.Target{Stack: stack}, States: states})
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
	note(fmt.Sprintf("dev: console at http://%s/ (queues, dead jobs, redrive, schedules, job status)", ln.Addr()))
	return func() { _ = hs.Close() }
}

// stackStates reads job states from the state table the stack names in its JobkitStateTable
// output, found on first use: the console starts before the stack is deployed.
type stackStates struct {
	in    *inspect.Inspector
	cfg   aws.Config
	stack string

	mu    sync.Mutex
	table *state.Table
}

// JobStatus implements console.StatusReader.
func (s *stackStates) JobStatus(ctx context.Context, id string) (jobs.JobStatus, error) {
	s.mu.Lock()
	t := s.table
	s.mu.Unlock()
	if t == nil {
		name, err := s.in.StackOutput(ctx, s.stack, contract.OutputStateTable)
		if err != nil {
			return jobs.JobStatus{}, err
		}
		if name == "" {
			return jobs.JobStatus{}, fmt.Errorf("the stack %s has no state table (yet)", s.stack)
		}
		if t, err = state.New(dynamodb.NewFromConfig(s.cfg), name, nil); err != nil {
			return jobs.JobStatus{}, err
		}
		s.mu.Lock()
		s.table = t
		s.mu.Unlock()
	}
	return t.JobStatus(ctx, id)
}
