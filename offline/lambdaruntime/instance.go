package lambdaruntime

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/offline/internal/lines"
	"github.com/jobkit-go/jobkit/offline/internal/procgroup"
	"github.com/jobkit-go/jobkit/offline/loopback"
)

// instance is one execution environment: a child process and its Runtime API server.
type instance struct {
	rt *Runtime
	id int

	// guarded by rt.mu
	reserved bool        // an invoker holds it
	current  *invocation // the invocation it was last given (or is about to be given)

	api    *apiServer
	srv    *http.Server
	ln     net.Listener
	cmd    *exec.Cmd
	out    *lines.Writer
	exited chan struct{} // closed once the process is reaped (or never started)

	mu       sync.Mutex
	procPID  int
	exitErr  error
	killOnce sync.Once
}

// start listens on a fresh loopback port and starts the bootstrap with AWS_LAMBDA_RUNTIME_API
// pointing at it.
func (in *instance) start() error {
	rt := in.rt
	in.api = newAPIServer(rt.arn, func() { rt.parked(in) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		close(in.exited)
		return fmt.Errorf("lambdaruntime: function %s: listen: %w", rt.fn.Name, err)
	}
	in.ln = ln
	in.srv = &http.Server{Handler: loopback.Guard(in.api), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = in.srv.Serve(ln) }()

	cmd := exec.Command(rt.fn.Bootstrap)
	cmd.Dir = rt.fn.taskRoot()
	cmd.Env = rt.environ(ln.Addr().String())
	if f, ok := rt.opts.Output.(*os.File); ok {
		cmd.Stdout, cmd.Stderr = f, f
	} else {
		in.out = lines.NewWriter(&rt.outMu, rt.opts.Output, "")
		cmd.Stdout, cmd.Stderr = in.out, in.out
	}
	cmd.SysProcAttr = procgroup.Attr()
	// Stop waiting for output copies a stray grandchild might hold open.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		_ = in.srv.Close()
		close(in.exited)
		return fmt.Errorf("lambdaruntime: function %s: start %s: %w", rt.fn.Name, rt.fn.Bootstrap, err)
	}
	in.cmd = cmd
	in.mu.Lock()
	in.procPID = cmd.Process.Pid
	in.mu.Unlock()
	rt.log.Debug("environment started", "instance", in.id, "pid", cmd.Process.Pid, "runtime_api", ln.Addr().String())

	rt.wg.Go(func() {
		err := cmd.Wait()
		// The leader is gone; anything it left in its process group goes too.
		procgroup.Kill(cmd.Process.Pid)
		if in.out != nil {
			in.out.Flush()
		}
		in.mu.Lock()
		in.exitErr = err
		in.mu.Unlock()
		close(in.exited)
		in.api.close()
		_ = in.srv.Close()
		rt.forget(in)
		rt.log.Debug("environment stopped", "instance", in.id, "pid", cmd.Process.Pid, "status", in.exitStatus())
	})
	return nil
}

func (in *instance) pid() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.procPID
}

func (in *instance) exitStatus() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.exitErr == nil {
		return "exit status 0"
	}
	return in.exitErr.Error()
}

// kill sends SIGKILL to the environment's process group and waits until the process is reaped.
func (in *instance) kill() {
	in.killOnce.Do(func() {
		if in.cmd == nil { // never started: start already closed exited
			return
		}
		procgroup.Kill(in.cmd.Process.Pid)
		// The leader too, in case it left its group (os.Process is safe against pid reuse).
		_ = in.cmd.Process.Kill()
	})
	<-in.exited
}

// environ builds the process environment: a minimal base, Options.ExtraEnv, the function's
// variables, then the variables Lambda reserves (which nothing overrides).
func (r *Runtime) environ(runtimeAPI string) []string {
	path := os.Getenv("PATH")
	path = cmp.Or(path, "/usr/local/bin:/usr/bin:/bin")
	env := map[string]string{
		"PATH": path,
		"LANG": "en_US.UTF-8",
		"TZ":   ":UTC",
	}
	if r.opts.Endpoint != "" {
		env["AWS_ENDPOINT_URL"] = r.opts.Endpoint
	}
	for k, v := range r.opts.ExtraEnv {
		env[k] = v
	}
	for k, v := range r.fn.Env {
		env[k] = v
	}
	var stream [16]byte
	_, _ = rand.Read(stream[:])
	handler := r.fn.Handler
	if handler == "" {
		handler = filepath.Base(r.fn.Bootstrap)
	}
	reserved := map[string]string{
		"_HANDLER":                        handler,
		"AWS_REGION":                      r.opts.Region,
		"AWS_DEFAULT_REGION":              r.opts.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        r.fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(r.fn.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(int((r.fn.Timeout + time.Second - 1) / time.Second)),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + r.fn.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + hex.EncodeToString(stream[:]),
		"AWS_LAMBDA_RUNTIME_API":          runtimeAPI,
		"LAMBDA_TASK_ROOT":                r.fn.taskRoot(),
		"LAMBDA_RUNTIME_DIR":              filepath.Dir(r.fn.Bootstrap),
	}
	if r.opts.AccessKeyID != "" {
		reserved["AWS_ACCESS_KEY_ID"] = r.opts.AccessKeyID
		reserved["AWS_SECRET_ACCESS_KEY"] = r.opts.SecretAccessKey
		if r.opts.SessionToken != "" {
			reserved["AWS_SESSION_TOKEN"] = r.opts.SessionToken
		}
	}
	for k, v := range reserved {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
