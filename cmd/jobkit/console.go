package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect/console"
)

// defaultConsoleAddr is where `jobkit console` listens unless --addr says otherwise: loopback only.
const defaultConsoleAddr = "127.0.0.1:7700"

type consoleCmd struct {
	addr       string
	readOnly   bool
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
--read-only hides and refuses every action.`,
		Example: `  # The console of the deployed stack, on http://127.0.0.1:7700/
  jobkit console

  # Against the offline stack, read-only, on another port
  jobkit --endpoint http://127.0.0.1:4566 console --read-only --addr 127.0.0.1:8080`,
		Args: noArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if _, _, err := net.SplitHostPort(c.addr); err != nil {
				return usageError{fmt.Errorf("--addr: %w", err)}
			}
			return nil
		},
		RunE: a.verb(c.run),
	}
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", defaultConsoleAddr, "address to listen on (host:port; port 0 picks a free one)")
	f.BoolVar(&c.readOnly, "read-only", false, "show no action and refuse them all (HTTP 403)")
	f.StringVar(&c.stateTable, "state-table", "", "the jobkit state table, for job status by id (default: the stack's "+jobs.OutputStateTable+" output, if any)")
	f.StringVar(&c.group, "schedule-group", "", "show the schedules of this group only (default: every group)")
	f.StringArrayVar(&c.hosts, "host", nil, "another host name the console answers to (repeatable; loopback names always)")
	f.DurationVar(&c.refresh, "refresh", 3*time.Second, "how often the page refreshes queue statistics")
	return cmd
}

func (c *consoleCmd) run(s *session, _ []string) error {
	o := console.Options{}
	if t, err := s.stateTable(c.stateTable); err == nil {
		o.States, o.StateTable = t, t.Name()
	} else if c.stateTable != "" {
		return err
	}
	srv, err := console.New(s.ctx, s.in, console.Options{
		States: o.States, Target: s.a.target(), ReadOnly: c.readOnly, StateTable: o.StateTable,
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
