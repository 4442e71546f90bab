package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect/console"
)

// defaultConsoleAddr is where `jobkit console` listens unless --addr says otherwise: loopback only.
const defaultConsoleAddr = "127.0.0.1:7700"

// consoleSecretEnv names the environment variable that may hold the console's secret.
const consoleSecretEnv = "JOBKIT_CONSOLE_SECRET"

type consoleCmd struct {
	addr       string
	readOnly   bool
	showBodies bool
	secretFile string
	secret     string
	stateTable string
	group      string
	hosts      []string
	refresh    time.Duration
}

func newConsoleCmd(a *app) *cobra.Command {
	c := &consoleCmd{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the ops console: a web page for queues, dead jobs, redrive, purge and schedules",
		Long: `console serves a web page over the same queues the other verbs see: queue depth, in flight,
delayed, oldest age and DLQ depth (refreshed live); each queue's dead jobs with kind, id,
attempts, reason, error and times; a job's whole envelope; redrive of one, selected or all dead
jobs with progress; purge of a DLQ after typing its name; schedules with their next fire
times. docs/console.md shows it.

It listens on 127.0.0.1 only unless --addr says otherwise, and prints its URL. Every action
needs a token made for this process (the page carries it) and a same-origin request;
--read-only hides and refuses every action, and hides the jobs' bodies unless --show-bodies.

Beyond loopback it needs a secret (--secret-file, or the environment variable
JOBKIT_CONSOLE_SECRET), which every request must carry: a browser asks for it (HTTP Basic
authentication, any user name), a program sends "Authorization: Bearer <secret>". Basic
authentication sends it in the clear: put TLS in front (a reverse proxy) or reach the console
through an SSH tunnel (ssh -L 7700:127.0.0.1:7700 host) and keep it on loopback.`,
		Example: `  # The console of the deployed stack, on http://127.0.0.1:7700/
  jobkit console

  # Against the offline stack, read-only, on another port
  jobkit --endpoint http://127.0.0.1:4566 console --read-only --addr 127.0.0.1:8080

  # On every interface, behind a TLS proxy, with a secret
  jobkit console --addr 0.0.0.0:7700 --host ops.example.com --secret-file /run/secrets/console`,
		Args: noArgs,
		PreRunE: func(*cobra.Command, []string) error {
			host, _, err := net.SplitHostPort(c.addr)
			if err != nil {
				return usageError{fmt.Errorf("--addr: %w", err)}
			}
			if c.showBodies && !c.readOnly {
				return usageError{errors.New("--show-bodies goes with --read-only (a console that acts shows bodies)")}
			}
			if c.secret, err = consoleSecret(c.secretFile); err != nil {
				return err
			}
			if !isLoopback(host) && c.secret == "" {
				return usageError{fmt.Errorf("--addr %s is not a loopback address: the console needs a secret there "+
					"(--secret-file, or %s), and TLS in front of it or an SSH tunnel", c.addr, consoleSecretEnv)}
			}
			return nil
		},
		RunE: a.verb(c.run),
	}
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", defaultConsoleAddr, "address to listen on (host:port; port 0 picks a free one)")
	f.BoolVar(&c.readOnly, "read-only", false, "show no action and refuse them all (HTTP 403); hide the jobs' bodies")
	f.BoolVar(&c.showBodies, "show-bodies", false, "with --read-only: show the jobs' bodies all the same")
	f.StringVar(&c.secretFile, "secret-file", "", "a file holding the secret every request must carry (default: $"+consoleSecretEnv+"); required beyond loopback")
	f.StringVar(&c.stateTable, "state-table", "", "the jobkit state table, for job status by id (default: the stack's "+contract.OutputStateTable+" output, if any)")
	f.StringVar(&c.group, "schedule-group", "", "show the schedules of this group only (default: every group)")
	f.StringArrayVar(&c.hosts, "host", nil, "another host name the console answers to (repeatable; loopback names always)")
	f.DurationVar(&c.refresh, "refresh", 3*time.Second, "how often the page refreshes queue statistics")
	return cmd
}

func (c *consoleCmd) run(s *session, _ []string) error {
	o := console.Options{}
	if t, err := s.stateTable(c.stateTable); err == nil {
		o.States, o.StateTable = t, t.Name()
		if o.Jobs, err = operator(s, t); err != nil {
			return err
		}
	} else if c.stateTable != "" {
		return err
	}
	srv, err := console.New(s.ctx, s.in, console.Options{
		States: o.States, Jobs: o.Jobs, Target: s.a.target(), ReadOnly: c.readOnly, StateTable: o.StateTable,
		HideBodies: c.readOnly && !c.showBodies, Secret: c.secret,
		ScheduleGroup: c.group, Hosts: c.hosts, Refresh: c.refresh,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	mode := ""
	if c.readOnly {
		mode = " (read-only)"
	}
	fmt.Fprintf(s.stdout, "jobkit console%s: http://%s/\n", mode, ln.Addr())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-s.ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// consoleSecret reads the secret from file (trimmed), else from the environment; "" if neither.
// A secret shorter than 16 characters is refused.
func consoleSecret(file string) (string, error) {
	secret, from := strings.TrimSpace(os.Getenv(consoleSecretEnv)), consoleSecretEnv
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--secret-file: %w", err)
		}
		secret, from = strings.TrimSpace(string(b)), "--secret-file "+file
	}
	if secret != "" && len(secret) < 16 {
		return "", usageError{fmt.Errorf("%s: the secret is %d characters; use at least 16 (e.g. openssl rand -hex 32)", from, len(secret))}
	}
	return secret, nil
}

// isLoopback reports whether a listening host is loopback only: localhost or a loopback IP. An
// empty host (every interface) or any other name is not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
