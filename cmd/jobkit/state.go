package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// stateTable returns the jobkit state table: --state-table, else the stack's JobkitStateTable
// output.
func (s *session) stateTable(flag string) (*state.Table, error) {
	name := flag
	if name == "" {
		out, err := s.in.StackOutput(s.ctx, s.a.stack, contract.OutputStateTable)
		if err != nil {
			return nil, err
		}
		if out == "" {
			return nil, fmt.Errorf("no job state table: stack %s has no %s output; give --state-table", s.a.stack, contract.OutputStateTable)
		}
		name = out
	}
	// ListJobs: an operator's cancel moves the job's index entry with it (a rare write, and one a
	// deployment without listing leaves unread).
	return state.New(dynamodb.NewFromConfig(s.cfg), name, &state.Options{SQS: sqs.NewFromConfig(s.cfg), ListJobs: true})
}

// jobJSON is the document `jobkit job show --json` prints (docs/cli.md).
type jobJSON struct {
	Version int            `json:"version"`
	Job     jobs.JobStatus `json:"job"`
}

// jobListJSON is the document `jobkit job list --json` prints (docs/cli.md).
type jobListJSON struct {
	Version int              `json:"version"`
	Queue   string           `json:"queue"`
	State   string           `json:"state"`
	Jobs    []jobs.JobStatus `json:"jobs"`
	Next    string           `json:"next"`
}

// printJobList prints a page of jobs as a table, and the cursor of the next page.
func printJobList(w io.Writer, doc jobListJSON) {
	if len(doc.Jobs) == 0 {
		fmt.Fprintf(w, "no %s jobs on %s\n", safe(doc.State, reasonWidth), safe(doc.Queue, nameWidth))
	} else {
		tw := table(w, "JOB ID", "KIND", "SINCE (UTC)", "ATTEMPT", "LAST ERROR")
		for _, j := range doc.Jobs {
			attempt := "-"
			if j.Attempt > 0 {
				attempt = strconv.Itoa(j.Attempt)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safe(j.ID, idWidth), safe(j.Kind, kindWidth),
				j.Since.UTC().Format("2006-01-02 15:04:05"), attempt, safe(j.LastError, errorWidth))
		}
		tw.Flush()
	}
	if doc.Next != "" {
		fmt.Fprintf(w, "more: --cursor %s\n", doc.Next)
	}
}

// batchJSON is the document `jobkit batch show --json` prints (docs/cli.md).
type batchJSON struct {
	Version int             `json:"version"`
	Batch   state.BatchInfo `json:"batch"`
}

func newJobCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Jobs and their state in the job state table: show, list by state, cancel, retry now"}
	var (
		asJSON bool
		table  string
	)
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a job's state: enqueued, running, retrying, succeeded, dead or cancelled",
		Long: `show prints what the job state table knows of a job: its state and since when, its attempt,
the next attempt's time and the last error of a retrying job, the reason of a dead one, and the
result a succeeded job set. Jobs are recorded when a client with a state table sends them.`,
		Example: `  jobkit job show 01JD3X0Q6S7V9M2D1YB4KQ7E5N
  jobkit --endpoint http://127.0.0.1:4566 job show 01JD3X0Q6S7V9M2D1YB4KQ7E5N --json`,
		Args: cobra.ExactArgs(1),
		RunE: a.verb(func(s *session, args []string) error {
			t, err := s.stateTable(table)
			if err != nil {
				return err
			}
			st, err := t.JobStatus(s.ctx, args[0])
			if err != nil {
				return jobError(args[0], err)
			}
			return s.print(asJSON, func() any { return jobJSON{Version: jsonVersion, Job: st} }, func(w io.Writer) { printJob(w, st) })
		}),
	}
	cancel := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job before it runs, whatever its delay (Client.Cancel)",
		Long: `cancel makes sure a job that has not started never runs: the next delivery of its message
deletes it unrun (its state cancelled, never a dead letter; a FIFO group moves on), and a job
parked in EventBridge Scheduler (a delay over 15 minutes) loses its schedule. Workers need the
idempotency middleware, or jobs/state's middleware. A job that is running, succeeded or dead
is not cancelled: the command says which, and exits 1. Cancelling again says when it was.`,
		Example: `  jobkit job cancel 01JD3X0Q6S7V9M2D1YB4KQ7E5N`,
		Args:    cobra.ExactArgs(1),
		RunE: a.verb(func(s *session, args []string) error {
			client, err := s.jobsClient(table)
			if err != nil {
				return err
			}
			started := time.Now()
			st, err := client.Cancel(s.ctx, args[0])
			if err != nil {
				return jobError(args[0], err)
			}
			res := cancelJSON{Version: jsonVersion, Job: st, Already: st.FinishedAt.Before(started.Add(-time.Second))}
			res.ScheduleDeleted = st.Parked() && !res.Already
			return s.print(asJSON, func() any { return res }, func(w io.Writer) {
				switch {
				case res.Already:
					fmt.Fprintf(w, "job %s: already cancelled at %s\n", safe(st.ID, idWidth), when(st.FinishedAt))
				case res.ScheduleDeleted:
					fmt.Fprintf(w, "job %s cancelled: its schedule is deleted, it will not run\n", safe(st.ID, idWidth))
				default:
					fmt.Fprintf(w, "job %s cancelled: its next delivery deletes it unrun\n", safe(st.ID, idWidth))
				}
			})
		}),
	}
	retry := &cobra.Command{
		Use:   "retry ID",
		Short: "Retry a job now instead of waiting out its backoff (Client.RetryNow)",
		Long: `retry makes a retrying job's message visible at once, so the next receive runs it. It needs
workers with job states (the runtime records the delivery's receipt with the retrying state). A
job that is not waiting (not retrying, already due, or received again since) is left alone:
the command says so, and exits 1.`,
		Example: `  jobkit job retry 01JD3X0Q6S7V9M2D1YB4KQ7E5N`,
		Args:    cobra.ExactArgs(1),
		RunE: a.verb(func(s *session, args []string) error {
			client, err := s.jobsClient(table)
			if err != nil {
				return err
			}
			st, err := client.RetryNow(s.ctx, args[0])
			if err != nil {
				return jobError(args[0], err)
			}
			return s.print(asJSON, func() any { return jobJSON{Version: jsonVersion, Job: st} }, func(w io.Writer) {
				fmt.Fprintf(w, "job %s retries now (attempt %d failed: %s)\n", safe(st.ID, idWidth), st.Attempt, safe(st.LastError, errorWidth))
			})
		}),
	}
	var (
		listState, listKind, cursor string
		limit                       int
	)
	list := &cobra.Command{
		Use:   "list --state STATE",
		Short: "List a queue's jobs in one state, newest first: enqueued, running, retrying, succeeded, dead, cancelled",
		Long: `list prints a queue's jobs in one state — what is retrying right now, and why — newest state
change first, a page at a time, with each job's attempt and last error. It reads the state table's
index of jobs by queue and state (never a scan of the table). The queue is the stack's only queue,
or the one -q names. A page can hold fewer jobs than --limit while more follow: the command
prints the cursor of the next page (--cursor), and "next": "" in --json when there is none.`,
		Example: `  jobkit job list --state retrying
  jobkit -q Email job list --state dead --kind email.send --limit 20
  jobkit -q Email job list --state succeeded --cursor eyJpZCI6...`,
		Args: noArgs,
		RunE: a.verb(func(s *session, _ []string) error {
			q, err := s.one(false)
			if err != nil {
				return err
			}
			t, err := s.stateTable(table)
			if err != nil {
				return err
			}
			page, err := t.List(s.ctx, state.ListOptions{Queue: q.URL, State: jobs.JobState(listState), Kind: listKind, Limit: limit, Cursor: cursor})
			if errors.Is(err, state.ErrBadListOptions) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			doc := jobListJSON{Version: jsonVersion, Queue: q.Name, State: listState, Jobs: page.Jobs, Next: page.Next}
			if doc.Jobs == nil {
				doc.Jobs = []jobs.JobStatus{}
			}
			return s.print(asJSON, func() any { return doc }, func(w io.Writer) { printJobList(w, doc) })
		}),
	}
	list.Flags().StringVar(&listState, "state", "", "the jobs' state: enqueued, running, retrying, succeeded, dead or cancelled (required)")
	list.Flags().StringVar(&listKind, "kind", "", "only jobs of this kind")
	list.Flags().IntVar(&limit, "limit", state.DefaultListLimit, fmt.Sprintf("jobs per page, 1-%d", state.MaxListLimit))
	list.Flags().StringVar(&cursor, "cursor", "", "continue from the page that printed it")
	_ = list.MarkFlagRequired("state")
	for _, c := range []*cobra.Command{show, cancel, retry, list} {
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
		c.Flags().StringVar(&table, "state-table", "", "the jobkit state table (default: the stack's "+contract.OutputStateTable+" output)")
		cmd.AddCommand(c)
	}
	return cmd
}

// jobsClient is a jobs.Client that operates on the jobs of the state table (--state-table, else
// the stack's): Cancel (a parked job's schedule found in any group) and RetryNow.
func (s *session) jobsClient(table string) (*jobs.Client, error) {
	t, err := s.stateTable(table)
	if err != nil {
		return nil, err
	}
	return operator(s, t)
}

// operator is a jobs.Client that operates on the jobs of t.
func operator(s *session, t *state.Table) (*jobs.Client, error) {
	return jobs.NewClient(sqs.NewFromConfig(s.cfg), jobs.ClientOptions{State: t, LongDelayer: s.in.ParkedJobs()})
}

// cancelJSON is the document `jobkit job cancel --json` prints (docs/cli.md).
type cancelJSON struct {
	Version         int            `json:"version"`
	Job             jobs.JobStatus `json:"job"`
	Already         bool           `json:"already"`          // it was cancelled before this command
	ScheduleDeleted bool           `json:"schedule_deleted"` // a parked job's schedule was deleted
}

// jobError words a job verb's error: a job with no state, or one past cancelling.
func jobError(id string, err error) error {
	if errors.Is(err, jobs.ErrJobNotFound) {
		return fmt.Errorf("job %s: no state recorded (never sent with a state table, or expired)", safe(id, idWidth))
	}
	return err
}

func printJob(w io.Writer, st jobs.JobStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("id", safe(st.ID, valueWidth))
	row("kind", safe(st.Kind, kindWidth))
	row("state", safe(string(st.State), reasonWidth))
	row("since", when(st.Since))
	if st.Attempt > 0 {
		row("attempt", fmt.Sprint(st.Attempt))
	}
	if p := st.Progress; p != nil {
		row("progress", fmt.Sprintf("%s%% %s (at %s)", strconv.FormatFloat(p.Percent, 'f', -1, 64), safe(p.Note, errorWidth), when(p.At)))
	}
	row("queue", safe(st.Queue, valueWidth))
	row("batch", safe(st.Batch, valueWidth))
	row("enqueued at", when(st.EnqueuedAt))
	row("deliver at", when(st.DeliverAt))
	row("next attempt at", when(st.NextAttemptAt))
	row("finished at", when(st.FinishedAt))
	row("reason", safe(st.Reason, reasonWidth))
	row("last error", safe(st.LastError, textWidth))
	row("duplicate of", safe(st.DuplicateOf, valueWidth))
	row("result", safe(string(st.Result), textWidth))
	tw.Flush()
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func newBatchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "batch", Short: "Fan-out batches: members, counts and callback"}
	var (
		asJSON bool
		table  string
	)
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a batch: members added, pending, succeeded, dead, and its callback",
		Example: `  jobkit batch show 01JD3X0Q6S7V9M2D1YB4KQ7E5N
  jobkit --endpoint http://127.0.0.1:4566 batch show 01JD3X0Q6S7V9M2D1YB4KQ7E5N --json`,
		Args: cobra.ExactArgs(1),
		RunE: a.verb(func(s *session, args []string) error {
			t, err := s.stateTable(table)
			if err != nil {
				return err
			}
			info, err := t.BatchStatus(s.ctx, args[0])
			if err != nil {
				return err
			}
			return s.print(asJSON, func() any { return batchJSON{Version: jsonVersion, Batch: info} }, func(w io.Writer) { printBatch(w, info) })
		}),
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
	show.Flags().StringVar(&table, "state-table", "", "the jobkit state table (default: the stack's "+contract.OutputStateTable+" output)")
	cmd.AddCommand(show)
	return cmd
}

func printBatch(w io.Writer, b state.BatchInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	status := "open"
	switch {
	case b.Done():
		status = "done (callback sent)"
	case b.Sealed:
		status = "closed (waiting for members)"
	}
	fmt.Fprintf(tw, "id\t%s\n", safe(b.ID, valueWidth))
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "members\t%d\n", b.Total)
	fmt.Fprintf(tw, "pending\t%d\n", b.Pending)
	fmt.Fprintf(tw, "succeeded\t%d\n", b.Succeeded)
	fmt.Fprintf(tw, "dead\t%d\n", b.Dead)
	fmt.Fprintf(tw, "shards\t%d\n", b.Shards)
	fmt.Fprintf(tw, "callback\t%s (%s)\n", safe(b.CallbackKind, kindWidth), safe(b.CallbackID, valueWidth))
	if b.Done() {
		fmt.Fprintf(tw, "callback sent at\t%s\n", when(b.CallbackSentAt))
	}
	fmt.Fprintf(tw, "created at\t%s\n", when(b.CreatedAt))
	tw.Flush()
}
