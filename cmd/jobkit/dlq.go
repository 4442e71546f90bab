package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// deadListJSON is the document `jobkit dlq list --json` prints (docs/cli.md).
type deadListJSON struct {
	Version int    `json:"version"`
	Queue   string `json:"queue"` // the DLQ URL
	// ApproximateCount is the DLQ's ApproximateNumberOfMessages when the listing began.
	ApproximateCount int64         `json:"approximate_count"`
	Scanned          int           `json:"scanned"`
	Truncated        bool          `json:"truncated"`
	Jobs             []deadJobJSON `json:"jobs"`
}

// deadJobJSON is one dead job in deadListJSON.
type deadJobJSON struct {
	MessageID       string     `json:"message_id"`
	JobID           string     `json:"job_id"`
	Kind            string     `json:"kind"`
	Reason          string     `json:"reason"`
	Error           string     `json:"error"`
	Attempts        int        `json:"attempts"`
	Function        string     `json:"function"`
	FirstReceivedAt *time.Time `json:"first_received_at"`
	FailedAt        *time.Time `json:"failed_at"`
	DeadLetteredAt  *time.Time `json:"dead_lettered_at"`
	SourceQueue     string     `json:"source_queue"`
	SourceMessageID string     `json:"source_message_id"`
	GroupID         string     `json:"group_id"`
	ReceiveCount    int        `json:"dlq_receive_count"`
}

// deadShowJSON is the document `jobkit dlq show --json` prints: the job with its body.
type deadShowJSON struct {
	Version int             `json:"version"`
	Queue   string          `json:"queue"`
	Job     deadJobShowJSON `json:"job"`
}

// deadJobShowJSON is a dead job with its envelope (null when the body is not one) and raw body.
type deadJobShowJSON struct {
	deadJobJSON
	Envelope json.RawMessage `json:"envelope"`
	Body     string          `json:"body"`
}

// redriveJSON is the document `jobkit dlq redrive --json` prints.
type redriveJSON struct {
	Version        int    `json:"version"`
	Queue          string `json:"queue"`
	Method         string `json:"method"`
	FallbackReason string `json:"fallback_reason"`
	TaskHandle     string `json:"task_handle"`
	Total          int64  `json:"total"`
	Moved          int64  `json:"moved"`
	Skipped        int64  `json:"skipped"`
	NoDestination  int64  `json:"no_destination"`
	Returned       int64  `json:"returned"`
	Failed         int64  `json:"failed"`
	Unconfirmed    int64  `json:"unconfirmed"`
	LeftInFlight   int64  `json:"left_in_flight"`
	// PossibleDuplicates counts messages whose send got no clear answer and was made again.
	PossibleDuplicates int64 `json:"possible_duplicates"`
	Window             int   `json:"window"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toDeadJSON(j *inspect.DeadJob) deadJobJSON {
	return deadJobJSON{
		MessageID: j.MessageID, JobID: j.JobID, Kind: j.Kind, Reason: j.Reason, Error: j.Error,
		Attempts: j.Attempts, Function: j.Function,
		FirstReceivedAt: timePtr(j.FirstReceivedAt), FailedAt: timePtr(j.FailedAt), DeadLetteredAt: timePtr(j.SentAt),
		SourceQueue: j.SourceQueue, SourceMessageID: j.SourceMessageID, GroupID: j.GroupID, ReceiveCount: j.ReceiveCount,
	}
}

func newDLQCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect, redrive and purge dead-lettered jobs",
		Long: `Dead-lettered jobs carry what the runtime knew when it gave up: kind, job id, reason,
error, attempts, function, first/last failure time and the queue they came from
(message attributes jobkit.*). A job the queue's RedrivePolicy moved (a crash loop)
has only its envelope.

The DLQ is the one of --queue (stack output or RedrivePolicy), or --dlq, or, when the
stack has a single DLQ, that one.`,
		Example: `  jobkit dlq list --queue email
  jobkit dlq show 01JD3Q7X2V8M4N6P8R0T2V4X6Z --queue email
  jobkit dlq redrive --queue email
  jobkit dlq purge --queue email --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDLQListCmd(a), newDLQShowCmd(a), newDLQRedriveCmd(a), newDLQPurgeCmd(a))
	return cmd
}

func newDLQListCmd(a *app) *cobra.Command {
	var (
		asJSON     bool
		filter     inspect.Filter
		limit      int
		visibility time.Duration
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead jobs: kind, id, reason, attempts, failed at, error",
		Long: `List the jobs in a dead-letter queue without consuming them.

The listing receives messages with a short visibility timeout (--visibility), keeps them
hidden while it scans so each is seen once, and hands them all back when it ends (also
on Ctrl-C; if the process is killed they come back when the timeout ends). Each listed
message's DLQ receive count goes up by one, and a redrive running at the same time
does not see them until the listing ends.

FIFO: SQS hands out a message group only while none of its messages is in flight, so
the listing shows the head of each group (what one receive returns, up to 10) and not
the messages behind it. approximate_count still counts everything.`,
		Example: `  jobkit dlq list --queue email
  jobkit dlq list --queue email --kind email.send --error timeout --limit 500
  jobkit dlq list --dlq https://sqs.us-east-1.amazonaws.com/123456789012/email-dlq --json`,
		Args: noArgs,
		RunE: a.onDLQ(func(s *session, q inspect.Queue, _ []string) error {
			list, err := s.in.ListDead(s.ctx, q.DLQURL, &inspect.ListOptions{Filter: filter, Limit: limit, Visibility: visibility})
			if err != nil {
				return err
			}
			return s.print(asJSON, func() any { return deadListDoc(list) }, func(w io.Writer) { printDeadList(w, list) })
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
	f.StringVar(&filter.Kind, "kind", "", "only jobs of this kind")
	f.StringVar(&filter.ErrorContains, "error", "", "only jobs whose error (or reason) contains this text, any case")
	f.IntVar(&limit, "limit", 100, "list at most this many jobs")
	f.DurationVar(&visibility, "visibility", 30*time.Second, "how long listed messages stay hidden while the listing runs")
	return cmd
}

func deadListDoc(list *inspect.DeadList) deadListJSON {
	doc := deadListJSON{Version: jsonVersion, Queue: list.QueueURL, ApproximateCount: list.Approximate,
		Scanned: list.Scanned, Truncated: list.Truncated, Jobs: []deadJobJSON{}}
	for i := range list.Jobs {
		doc.Jobs = append(doc.Jobs, toDeadJSON(&list.Jobs[i]))
	}
	return doc
}

func printDeadList(w io.Writer, list *inspect.DeadList) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB ID\tKIND\tREASON\tATTEMPTS\tFAILED AT\tERROR")
	for i := range list.Jobs {
		j := &list.Jobs[i]
		failed := j.FailedAt
		if failed.IsZero() {
			failed = j.SentAt
		}
		reason := j.Reason
		if reason == "" {
			reason = "(redrive policy)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", orDash(safe(j.JobID, idWidth)), orDash(safe(j.Kind, kindWidth)),
			safe(reason, reasonWidth), j.Attempts, failed.Format(time.RFC3339), oneLine(j.Error, errorWidth))
	}
	tw.Flush()
	more := ""
	if list.Truncated {
		more = " (truncated: raise --limit)"
	}
	fmt.Fprintf(w, "%d shown, %d scanned, about %d in %s%s\n", len(list.Jobs), list.Scanned, list.Approximate, safe(jobs.QueueName(list.QueueURL), nameWidth), more)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine flattens s to one safe line of at most n runes.
func oneLine(s string, n int) string {
	return orDash(safe(strings.Join(strings.Fields(s), " "), n))
}

func newDLQShowCmd(a *app) *cobra.Command {
	var (
		asJSON     bool
		visibility time.Duration
	)
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one dead job (by job id or message id) with its error and envelope",
		Long: `Show one dead job, found by its job id or its DLQ message id, with everything the
runtime recorded and its envelope. It scans the DLQ the way 'dlq list' does (nothing is
consumed).`,
		Example: `  jobkit dlq show 01JD3Q7X2V8M4N6P8R0T2V4X6Z --queue email
  jobkit dlq show 01JD3Q7X2V8M4N6P8R0T2V4X6Z --queue email --json | jq .job.envelope.args`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("%s takes one job id or message id", cmd.CommandPath())}
			}
			return nil
		},
		RunE: a.onDLQ(func(s *session, q inspect.Queue, args []string) error {
			j, err := s.in.ShowDead(s.ctx, q.DLQURL, args[0], &inspect.ListOptions{Visibility: visibility})
			if err != nil {
				return err
			}
			return s.print(asJSON, func() any { return deadShowDoc(q.DLQURL, j) }, func(w io.Writer) { printDeadJob(w, j) })
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
	cmd.Flags().DurationVar(&visibility, "visibility", 30*time.Second, "how long scanned messages stay hidden while the search runs")
	return cmd
}

func deadShowDoc(dlqURL string, j *inspect.DeadJob) deadShowJSON {
	d := deadJobShowJSON{deadJobJSON: toDeadJSON(j), Body: j.Body, Envelope: json.RawMessage("null")}
	if j.Envelope != nil {
		if raw, err := json.Marshal(j.Envelope); err == nil {
			d.Envelope = raw
		}
	}
	return deadShowJSON{Version: jsonVersion, Queue: dlqURL, Job: d}
}

func printDeadJob(w io.Writer, j *inspect.DeadJob) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, orDash(safe(v, valueWidth))) }
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	}
	reason := j.Reason
	if reason == "" {
		reason = "(moved by the queue's RedrivePolicy)"
	}
	row("job id:", j.JobID)
	row("kind:", j.Kind)
	row("reason:", reason)
	row("attempts:", fmt.Sprint(j.Attempts))
	row("function:", j.Function)
	row("first received:", ts(j.FirstReceivedAt))
	row("failed at:", ts(j.FailedAt))
	row("dead-lettered at:", ts(j.SentAt))
	row("source queue:", j.SourceQueue)
	row("source message:", j.SourceMessageID)
	row("message id:", j.MessageID)
	row("group:", j.GroupID)
	row("DLQ receives:", fmt.Sprint(j.ReceiveCount))
	tw.Flush()
	fmt.Fprintln(w, "error:")
	fmt.Fprintln(w, indent(orDash(safeLines(j.Error, textWidth))))
	if j.Envelope != nil {
		raw, _ := json.Marshal(j.Envelope)
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "  ", "  ") == nil {
			fmt.Fprintln(w, "envelope:")
			fmt.Fprintln(w, "  "+safeLines(buf.String(), textWidth))
			return
		}
	}
	fmt.Fprintln(w, "body (not a jobkit envelope):")
	fmt.Fprintln(w, indent(safeLines(j.Body, textWidth)))
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// redriveLong is the help text of `jobkit dlq redrive`.
const redriveLong = `Move dead jobs back to the queue they came from.

--method auto (the default) starts an SQS message move task (StartMessageMoveTask) and
follows it; where the endpoint lacks it (the offline emulator) or a filter is given
(--kind, --error), it moves messages itself: receive from the DLQ, send to the source
queue (--to, else the message's jobkit.source_queue attribute, else the queue of
--queue), then delete from the DLQ. The attribute is trusted only when it names a source
queue of the DLQ (ListDeadLetterSourceQueues, --queue, the stack's queues on that DLQ); any
other job stays in the DLQ and is reported as having no valid destination. --to, the
operator's own choice, is not checked.

The manual move never loses a message when interrupted, and sends each message at most
once per run (a send that got no clear answer and had to be made again is reported as a
possible duplicate). Killed outright, a run can leave at most --concurrency x 10 messages (the
in-flight window) sent but not yet deleted: run again, and those arrive a second time
(their job ids keep the jobs idempotent). Ctrl-C instead lets the batches in progress
finish: no duplicates. Messages still in flight on the DLQ (from an interrupted run or a
listing) are waited for up to --wait.

FIFO: messages keep their group; the deduplication id is derived from the job id and the
DLQ message id, so a repeated send within 5 minutes is dropped by SQS.

Progress goes to stderr (a bar on a terminal, plain lines otherwise); the final count
to stdout.`

// redriveCmd is `jobkit dlq redrive`: its flags, their check, and the run.
type redriveCmd struct {
	o        inspect.RedriveOptions
	method   string
	progress string
	asJSON   bool
}

func newDLQRedriveCmd(a *app) *cobra.Command {
	r := &redriveCmd{}
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Move dead jobs back to their queue (StartMessageMoveTask, or a safe manual move)",
		Long:  redriveLong,
		Example: `  # Everything back where it came from
  jobkit dlq redrive --queue email

  # Only one kind whose error mentions a timeout, as JSON
  jobkit dlq redrive --queue email --kind email.send --error timeout --json

  # On the emulator (manual move), to an explicit queue
  jobkit --endpoint http://127.0.0.1:4566 dlq redrive --dlq email-dlq --to email`,
		Args:    noArgs,
		PreRunE: func(*cobra.Command, []string) error { return r.check() },
		RunE:    a.onDLQ(func(s *session, q inspect.Queue, _ []string) error { return r.run(s, q) }),
	}
	r.flags(cmd)
	return cmd
}

func (r *redriveCmd) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	o := &r.o
	f.StringVar(&r.method, "method", "auto", "auto, native (StartMessageMoveTask) or manual (receive/send/delete)")
	f.StringVar(&o.To, "to", "", "send every job to this queue (URL or name) instead of its source queue")
	f.StringVar(&o.Filter.Kind, "kind", "", "only jobs of this kind (manual move)")
	f.StringVar(&o.Filter.ErrorContains, "error", "", "only jobs whose error (or reason) contains this text, any case (manual move)")
	f.IntVar(&o.Concurrency, "concurrency", inspect.DefaultRedriveConcurrency, "manual move workers; each moves at most 10 messages at a time")
	f.DurationVar(&o.Visibility, "visibility", 30*time.Second, "manual move: visibility timeout of received messages (an interrupted move's messages return after it)")
	f.DurationVar(&o.InFlightWait, "wait", 0, "manual move: how long to wait for messages in flight on the DLQ to come back (default --visibility + 15s; negative: don't)")
	f.Int32Var(&o.MaxPerSecond, "max-per-second", 0, "native move: MaxNumberOfMessagesPerSecond (up to 500; 0: SQS decides)")
	f.StringVar(&r.progress, "progress", progressAuto, "progress display on stderr: auto (bar on a terminal), bar, plain, none")
	f.BoolVar(&r.asJSON, "json", false, "print the result as JSON (schema in docs/cli.md)")
}

// check validates the flags before anything is called.
func (r *redriveCmd) check() error {
	switch r.method {
	case "auto", "":
		r.o.Method = inspect.RedriveAuto
	case "native":
		r.o.Method = inspect.RedriveNative
	case "manual":
		r.o.Method = inspect.RedriveManual
	default:
		return usageError{fmt.Errorf("--method must be auto, native or manual, not %q", r.method)}
	}
	return checkProgress(r.progress)
}

// run resolves the destinations, moves the jobs with progress on stderr, and reports.
func (r *redriveCmd) run(s *session, q inspect.Queue) error {
	rep, err := newReporter(s.stderr, r.progress, "redrive")
	if err != nil {
		return err
	}
	o := r.o
	if o.To != "" {
		if o.To, err = s.queueURL(o.To); err != nil {
			return err
		}
	}
	o.Source = q.URL
	if o.To == "" {
		// The deployed stack's queues on this DLQ are trusted destinations too (no stack: none).
		o.Sources, _ = s.in.StackSources(s.ctx, s.a.stack, q.DLQURL)
	}
	o.Progress = func(p inspect.RedriveProgress) {
		detail := fmt.Sprintf("moved (%s)", p.Method)
		if p.Skipped > 0 || p.Failed > 0 {
			detail += fmt.Sprintf(", skipped %d, failed %d", p.Skipped, p.Failed)
		}
		rep.update(p.Moved, p.Total, detail)
	}
	res, err := s.in.Redrive(s.ctx, q.DLQURL, &o)
	rep.finish()
	if res != nil {
		if perr := s.print(r.asJSON, func() any { return redriveDoc(q.DLQURL, res) }, func(w io.Writer) { printRedrive(w, q, res) }); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if res.Failed > 0 || res.Unconfirmed > 0 {
		return fmt.Errorf("redrive incomplete: %d failed, %d unconfirmed (still in the DLQ)", res.Failed, res.Unconfirmed)
	}
	return nil
}

func redriveDoc(dlq string, r *inspect.RedriveResult) redriveJSON {
	return redriveJSON{
		Version: jsonVersion, Queue: dlq, Method: string(r.Method), FallbackReason: r.FallbackReason, TaskHandle: r.TaskHandle,
		Total: r.Total, Moved: r.Moved, Skipped: r.Skipped, NoDestination: r.NoDestination, Returned: r.Returned,
		Failed: r.Failed, Unconfirmed: r.Unconfirmed, LeftInFlight: r.LeftInFlight, PossibleDuplicates: r.PossibleDuplicates, Window: r.Window,
	}
}

func printRedrive(w io.Writer, q inspect.Queue, r *inspect.RedriveResult) {
	fmt.Fprintf(w, "moved %d of %d jobs from %s (%s", r.Moved, r.Total, safe(jobs.QueueName(q.DLQURL), nameWidth), r.Method)
	if r.TaskHandle != "" {
		fmt.Fprintf(w, ", task %s", safe(r.TaskHandle, valueWidth))
	}
	fmt.Fprintln(w, ")")
	if r.FallbackReason != "" {
		fmt.Fprintf(w, "manual move because: %s\n", safe(r.FallbackReason, lineWidth))
	}
	if r.Skipped+r.NoDestination+r.Returned > 0 {
		fmt.Fprintf(w, "left in the DLQ: %d not selected, %d with no valid destination, %d failed again during the run\n", r.Skipped, r.NoDestination, r.Returned)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "failed to send: %d (still in the DLQ)\n", r.Failed)
	}
	if r.Unconfirmed > 0 {
		fmt.Fprintf(w, "sent but not deleted from the DLQ: %d (the next redrive sends them again)\n", r.Unconfirmed)
	}
	if r.LeftInFlight > 0 {
		fmt.Fprintf(w, "%d messages were in flight on the DLQ and were not moved: run again\n", r.LeftInFlight)
	}
	if r.PossibleDuplicates > 0 {
		fmt.Fprintf(w, "possible duplicates: %d (a send got no clear answer and was made again)\n", r.PossibleDuplicates)
	}
}

func newDLQPurgeCmd(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Delete every message in the dead-letter queue (asks first; --yes skips)",
		Long: `Delete every message in the dead-letter queue with SQS PurgeQueue. It cannot be undone;
jobkit asks for confirmation on stdin unless --yes is given. SQS finishes a purge within
60 seconds and allows one purge of a queue every 60 seconds.`,
		Example: `  jobkit dlq purge --queue email
  jobkit dlq purge --dlq https://sqs.us-east-1.amazonaws.com/123456789012/email-dlq --yes`,
		Args: noArgs,
		RunE: a.onDLQ(func(s *session, q inspect.Queue, _ []string) error {
			if !yes {
				d, err := s.in.Depth(s.ctx, q.DLQURL)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.stderr, "Purge about %d messages from dead-letter queue %s? This cannot be undone. [y/N] ",
					d.Total(), safe(jobs.QueueName(q.DLQURL), nameWidth))
				answer, _ := bufio.NewReader(s.stdin).ReadString('\n')
				switch strings.ToLower(strings.TrimSpace(answer)) {
				case "y", "yes":
				default:
					return fmt.Errorf("purge cancelled: nothing deleted")
				}
			}
			n, err := s.in.Purge(s.ctx, q.DLQURL)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.stdout, "purged %s (about %d messages; SQS finishes within 60 s)\n", safe(jobs.QueueName(q.DLQURL), nameWidth), n)
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
