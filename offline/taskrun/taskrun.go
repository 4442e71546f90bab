// Package taskrun runs a container of an ECS task definition as a local process, as ECS runs a
// task: the environment the task definition gives it (plus the endpoint, region and credentials
// of the emulator), restarted when it exits (as a service replaces a stopped task), and stopped as
// ECS stops a task — SIGTERM, then SIGKILL once the stop timeout has passed.
package taskrun

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/jobkit-go/jobkit/offline/internal/lines"
	"github.com/jobkit-go/jobkit/offline/internal/procgroup"
)

// Options configure a Task.
type Options struct {
	// Name labels the task's output lines ("[<Name>] ") and log events. Required.
	Name string
	// Binary is the executable. Required.
	Binary string
	// Env is the container's environment (the task definition's).
	Env map[string]string
	// Region, Endpoint and the credentials are what ECS would give the task through its role; the
	// container's own variables do not override them.
	Region, Endpoint                           string
	AccessKeyID, SecretAccessKey, SessionToken string
	// StopTimeout is the time between SIGTERM and SIGKILL when the task is stopped. Default 30 s.
	StopTimeout time.Duration
	// RestartDelay is the wait before a process that exited is started again; it doubles after
	// each exit within a minute of its start, up to MaxRestartDelay. Default 1 s.
	RestartDelay time.Duration
	// MaxRestartDelay bounds the doubled RestartDelay. Default 30 s.
	MaxRestartDelay time.Duration
	// Output receives the process's stdout and stderr, whole lines prefixed; default os.Stderr.
	Output io.Writer
	// OutputMu, if set, serialises writes to Output with other writers.
	OutputMu *sync.Mutex
	// Logger receives starts, exits and restarts; default discards.
	Logger *slog.Logger
	// OnStart, if set, is called with each process's pid once it runs.
	OnStart func(pid int)
}

// Task is a running container: one process at a time, restarted when it exits, until Stop.
type Task struct {
	o    Options
	log  *slog.Logger
	out  *lines.Writer
	mu   sync.Mutex
	cmd  *exec.Cmd // the current process, nil between processes
	exit chan struct{}
	stop chan struct{}
	done chan struct{}

	starts int

	stopOnce sync.Once
	stopped  bool // Stop's answer
}

// Start starts the task's first process and the loop that restarts it.
func Start(o Options) (*Task, error) {
	if o.Name == "" || o.Binary == "" {
		return nil, errors.New("taskrun: Options.Name and Options.Binary are required")
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 30 * time.Second
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = time.Second
	}
	if o.MaxRestartDelay <= 0 {
		o.MaxRestartDelay = 30 * time.Second
	}
	o.MaxRestartDelay = max(o.MaxRestartDelay, o.RestartDelay)
	if o.Output == nil {
		o.Output = os.Stderr
	}
	if o.OutputMu == nil {
		o.OutputMu = &sync.Mutex{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Task{o: o, log: o.Logger, stop: make(chan struct{}), done: make(chan struct{}),
		out: lines.NewWriter(o.OutputMu, o.Output, "["+o.Name+"] ")}
	if err := t.spawn(); err != nil {
		return nil, err
	}
	go t.supervise()
	return t, nil
}

// environ is the process environment: a minimal base, the container's variables, then what
// ECS's task role and endpoint give (which the container's variables do not override).
func (t *Task) environ() []string {
	path := os.Getenv("PATH")
	path = cmp.Or(path, "/usr/local/bin:/usr/bin:/bin")
	env := map[string]string{"PATH": path, "LANG": "en_US.UTF-8", "TZ": ":UTC"}
	for k, v := range t.o.Env {
		env[k] = v
	}
	fixed := map[string]string{
		"AWS_REGION": t.o.Region, "AWS_DEFAULT_REGION": t.o.Region, "AWS_ENDPOINT_URL": t.o.Endpoint,
		"AWS_ACCESS_KEY_ID": t.o.AccessKeyID, "AWS_SECRET_ACCESS_KEY": t.o.SecretAccessKey, "AWS_SESSION_TOKEN": t.o.SessionToken,
	}
	for k, v := range fixed {
		if v != "" {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// spawn starts a process.
func (t *Task) spawn() error {
	cmd := exec.Command(t.o.Binary)
	cmd.Env = t.environ()
	cmd.Stdout, cmd.Stderr = t.out, t.out
	cmd.SysProcAttr = procgroup.Attr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("taskrun: %s: %w", t.o.Name, err)
	}
	exit := make(chan struct{})
	t.mu.Lock()
	t.cmd, t.exit = cmd, exit
	t.starts++
	t.mu.Unlock()
	t.log.Info("task process started", "task", t.o.Name, "pid", cmd.Process.Pid)
	if t.o.OnStart != nil {
		t.o.OnStart(cmd.Process.Pid)
	}
	go func() {
		err := cmd.Wait()
		t.out.Flush()
		t.log.Info("task process exited", "task", t.o.Name, "pid", cmd.Process.Pid, "status", exitStatus(err))
		t.mu.Lock()
		t.cmd = nil
		t.mu.Unlock()
		close(exit)
	}()
	return nil
}

// supervise restarts the process each time it exits, until Stop.
func (t *Task) supervise() {
	defer close(t.done)
	delay := t.o.RestartDelay
	for {
		t.mu.Lock()
		exit := t.exit
		t.mu.Unlock()
		started := time.Now()
		select {
		case <-t.stop:
			return
		case <-exit:
		}
		if time.Since(started) > time.Minute {
			delay = t.o.RestartDelay
		}
		select {
		case <-t.stop:
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, t.o.MaxRestartDelay)
		if err := t.spawn(); err != nil {
			t.log.Error("task process could not restart", "task", t.o.Name, "err", err)
			return
		}
	}
}

// Signal sends sig to the current process (a fault, a SIGTERM mid-job); false if none runs.
func (t *Task) Signal(sig os.Signal) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cmd == nil {
		return false
	}
	return t.cmd.Process.Signal(sig) == nil
}

// PID returns the current process's pid, 0 between processes.
func (t *Task) PID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cmd == nil {
		return 0
	}
	return t.cmd.Process.Pid
}

// Starts returns how many processes the task has started (1 + restarts).
func (t *Task) Starts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.starts
}

// Stop stops the task as ECS does: no more restarts, SIGTERM to the process, SIGKILL to its
// process group after StopTimeout. It returns once the process has exited; true if it exited
// before the SIGKILL. Later calls return the first's answer.
func (t *Task) Stop() bool {
	t.stopOnce.Do(func() { t.stopped = t.stopNow() })
	return t.stopped
}

func (t *Task) stopNow() bool {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	cmd, exit := t.cmd, t.exit
	t.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(t.o.StopTimeout)
	defer timer.Stop()
	select {
	case <-exit:
		return true
	case <-timer.C:
		procgroup.Kill(cmd.Process.Pid)
		<-exit
		return false
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
