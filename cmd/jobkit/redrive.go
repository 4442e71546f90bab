package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

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
	// Remaining is the DLQ's depth read after the move; null when the redrive ended in an error.
	Remaining       *int64 `json:"remaining"`
	RemainingReason string `json:"remaining_reason"`
}

// redriveLong is the help text of `jobkit dlq redrive`.
const redriveLong = `Move dead jobs back to the queue they came from.

--method auto (the default) starts an SQS message move task (StartMessageMoveTask) and
follows it, then reads the DLQ to report what is still there. Where the endpoint lacks
it (the offline emulator), a filter is given (--kind, --error) or the queues are FIFO,
it moves messages itself: receive from the DLQ, send to the source queue (--to, else
the message's jobkit.source_queue attribute, else the queue of --queue), then delete
from the DLQ. The attribute is trusted only when it names a source queue of the DLQ
(ListDeadLetterSourceQueues, --queue, the stack's queues on that DLQ); any other job
stays in the DLQ and is reported as having no valid destination. --to, the operator's
own choice, is not checked.

The manual move never loses a message when interrupted, and sends each message at most
once per run (a send that got no clear answer and had to be made again is reported as a
possible duplicate). Killed outright, a run can leave at most --concurrency x 10 messages (the
in-flight window) sent but not yet deleted: run again, and those arrive a second time
(their job ids keep the jobs idempotent). Ctrl-C instead lets the batches in progress
finish: no duplicates. Messages still in flight on the DLQ (from an interrupted run or a
listing) are waited for up to --wait.

FIFO: messages keep their group; the deduplication id is derived from the job id and the
DLQ message id, so a repeated send within 5 minutes is dropped by SQS. A native move
would keep each message's own deduplication id, and SQS may then drop a job redriven
within 5 minutes of its send: --method native is refused on FIFO queues.

Progress goes to stderr (a bar on a terminal, plain lines otherwise); the final count
to stdout, one line: what moved, each count of what stayed with its reason, and what is
still in the DLQ (its depth, read after the move) and why.`

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

  # One dead job, by id
  jobkit dlq redrive --queue email --id 01JD3Q7X2V8M4N6P8R0T2V4X6Z

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
	f.StringVar(&o.Filter.ID, "id", "", "only the dead job with this job id or message id (manual move)")
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
		checked := err == nil // Remaining is read only after a move that ended well
		if perr := s.print(r.asJSON, func() any { return redriveDoc(q.DLQURL, res, checked) }, func(w io.Writer) { printRedrive(w, q, res, checked) }); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if o.Filter.ID != "" && res.Moved == 0 && res.Failed == 0 && res.Unconfirmed == 0 && res.NoDestination == 0 {
		return fmt.Errorf("%w: no dead job %s in %s (already redriven, or never dead-lettered there)", inspect.ErrNotFound, safe(o.Filter.ID, idWidth), safe(q.DLQURL, valueWidth))
	}
	if res.Failed > 0 || res.Unconfirmed > 0 || res.NoDestination > 0 {
		return fmt.Errorf("redrive incomplete: %d failed, %d unconfirmed, %d with no valid destination (still in the DLQ)",
			res.Failed, res.Unconfirmed, res.NoDestination)
	}
	return nil
}

func redriveDoc(dlq string, r *inspect.RedriveResult, checked bool) redriveJSON {
	doc := redriveJSON{
		Version: jsonVersion, Queue: dlq, Method: string(r.Method), FallbackReason: r.FallbackReason, TaskHandle: r.TaskHandle,
		Total: r.Total, Moved: r.Moved, Skipped: r.Skipped, NoDestination: r.NoDestination, Returned: r.Returned,
		Failed: r.Failed, Unconfirmed: r.Unconfirmed, LeftInFlight: r.LeftInFlight, PossibleDuplicates: r.PossibleDuplicates, Window: r.Window,
	}
	if checked {
		doc.Remaining, doc.RemainingReason = &r.Remaining, r.RemainingReason
	}
	return doc
}

// redriveCount is one count of a redrive's result and what it means, as the summary line says it.
type redriveCount struct {
	n    int64
	what string
}

// redriveCounts lists the counts of a redrive that the summary names when they are not zero.
func redriveCounts(r *inspect.RedriveResult) []redriveCount {
	return []redriveCount{
		{r.Skipped, "not selected by --kind/--error/--id (left in the DLQ)"},
		{r.NoDestination, "with no valid destination (their jobkit.source_queue is not a source queue of the DLQ; left in the DLQ, --to moves them)"},
		{r.Returned, "failed again and came back during the run (left in the DLQ)"},
		{r.Failed, "failed to send (still in the DLQ)"},
		{r.Unconfirmed, "sent but not deleted from the DLQ (the next redrive sends them again)"},
		{r.LeftInFlight, "in flight on the DLQ, held by another reader or an interrupted run (run again)"},
		{r.PossibleDuplicates, "possible duplicates (a send got no clear answer and was made again)"},
	}
}

// printRedrive prints the summary line — what moved, each count that is not zero with its
// reason, and what is still in the DLQ when checked — then why the manual move was used.
func printRedrive(w io.Writer, q inspect.Queue, r *inspect.RedriveResult, checked bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "moved %d of %d jobs from %s (%s", r.Moved, r.Total, safe(awsarn.QueueName(q.DLQURL), nameWidth), r.Method)
	if r.TaskHandle != "" {
		fmt.Fprintf(&b, ", task %s", safe(r.TaskHandle, valueWidth))
	}
	b.WriteString(")")
	for _, c := range redriveCounts(r) {
		if c.n > 0 {
			fmt.Fprintf(&b, "; %d %s", c.n, c.what)
		}
	}
	if checked {
		fmt.Fprintf(&b, "; %d still in the dead-letter queue", r.Remaining)
		if r.RemainingReason != "" {
			fmt.Fprintf(&b, ": %s", safe(r.RemainingReason, lineWidth))
		}
	}
	fmt.Fprintln(w, b.String())
	if r.FallbackReason != "" {
		fmt.Fprintf(w, "manual move because: %s\n", safe(r.FallbackReason, lineWidth))
	}
}
