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

	"github.com/jobkit-go/jobkit/jobs/awsarn"
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
	// DeadLetteredAt is when the message entered the DLQ; null when unknown (RedrivePolicy).
	DeadLetteredAt  *time.Time `json:"dead_lettered_at"`
	SentAt          *time.Time `json:"sent_at"` // the message's SentTimestamp
	SourceQueue     string     `json:"source_queue"`
	SourceMessageID string     `json:"source_message_id"`
	GroupID         string     `json:"group_id"`
	ReceiveCount    int        `json:"dlq_receive_count"`
	// RedrivePolicy is true when SQS moved the message by the queue's RedrivePolicy, and
	// DeadLetterSourceARN the queue it moved it from, where the endpoint says so.
	RedrivePolicy       bool   `json:"redrive_policy"`
	DeadLetterSourceARN string `json:"dead_letter_source_arn"`
	Hint                string `json:"hint"` // what the reason usually means and what to do
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
		FirstReceivedAt: timePtr(j.FirstReceivedAt), FailedAt: timePtr(j.FailedAt),
		DeadLetteredAt: timePtr(j.DeadLetteredAt), SentAt: timePtr(j.SentAt),
		SourceQueue: j.SourceQueue, SourceMessageID: j.SourceMessageID, GroupID: j.GroupID, ReceiveCount: j.ReceiveCount,
		RedrivePolicy: j.ByRedrivePolicy(), DeadLetterSourceARN: j.DeadLetterSourceARN, Hint: j.Hint(),
	}
}

func newDLQCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect, redrive and purge dead-lettered jobs",
		Long: `Dead-lettered jobs carry what the runtime knew when it gave up: kind, job id, reason,
error, attempts, function, first/last failure time and the queue they came from
(message attributes jobkit.*). A job the queue's RedrivePolicy moved into its holding
queue carries them too, written by the queue's redrive recorder (reason redrive_policy);
one SQS moved into the DLQ itself, unrecorded, has only its envelope.

The DLQ is the one of --queue (stack output or RedrivePolicy, through a holding queue),
or --dlq, or, when the stack has a single DLQ, that one.`,
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
	tw := table(w, "JOB ID", "KIND", "REASON", "ATTEMPTS", "FAILED AT", "ERROR")
	for i := range list.Jobs {
		j := &list.Jobs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", orDash(safe(j.JobID, idWidth)), orDash(safe(j.Kind, kindWidth)),
			safe(reasonLabel(j), reasonWidth), j.Attempts, failedAt(j), oneLine(j.Error, errorWidth))
	}
	tw.Flush()
	more := ""
	if list.Truncated {
		more = " (truncated: raise --limit)"
	}
	fmt.Fprintf(w, "%d shown, %d scanned, about %d in %s%s\n", len(list.Jobs), list.Scanned, list.Approximate, safe(awsarn.QueueName(list.QueueURL), nameWidth), more)
	printHints(w, list.Jobs)
}

// redrivePolicyLabel stands for the reason of a job the queue's RedrivePolicy moved.
const redrivePolicyLabel = "(redrive policy)"

// reasonLabel is a dead job's reason as the table shows it.
func reasonLabel(j *inspect.DeadJob) string {
	if j.ByRedrivePolicy() {
		return redrivePolicyLabel
	}
	return j.Reason
}

// failedAt is the FAILED AT column: when the runtime gave up on the job, or "unknown" for a job
// the queue's RedrivePolicy moved (SQS keeps no time of the move; its SentTimestamp is the send's).
func failedAt(j *inspect.DeadJob) string {
	switch {
	case j.ByRedrivePolicy():
		return "unknown"
	case !j.FailedAt.IsZero():
		return j.FailedAt.Format(time.RFC3339)
	case !j.DeadLetteredAt.IsZero():
		return j.DeadLetteredAt.Format(time.RFC3339)
	}
	return "-"
}

// printHints prints, under a listing, one line per reason among jobs that has a hint: what it
// usually means and what to do.
func printHints(w io.Writer, list []inspect.DeadJob) {
	seen := map[string]bool{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := range list {
		label, hint := reasonLabel(&list[i]), list[i].Hint()
		if hint == "" || seen[label] {
			continue
		}
		if len(seen) == 0 {
			fmt.Fprintln(tw, "why:")
		}
		seen[label] = true
		if label == redrivePolicyLabel {
			hint += "; FAILED AT unknown: SQS keeps no time of the move"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", safe(label, reasonWidth), hint)
	}
	tw.Flush()
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
	row("job id:", j.JobID)
	row("kind:", j.Kind)
	row("reason:", showReason(j))
	row("why:", j.Hint())
	row("attempts:", fmt.Sprint(j.Attempts))
	row("function:", j.Function)
	row("first received:", ts(j.FirstReceivedAt))
	row("failed at:", ts(j.FailedAt))
	row("dead-lettered at:", deadLetteredAt(j))
	if j.DeadLetterSourceARN != "" {
		row("moved from:", j.DeadLetterSourceARN)
	}
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

// showReason is a dead job's reason as 'dlq show' says it.
func showReason(j *inspect.DeadJob) string {
	switch {
	case !j.ByRedrivePolicy():
		return j.Reason
	case j.Reason != "":
		// A native redrive keeps the jobkit.* attributes of the job's earlier dead-lettering.
		return "(moved by the queue's RedrivePolicy; jobkit.reason " + j.Reason + " is from an earlier dead-lettering)"
	}
	return "(moved by the queue's RedrivePolicy)"
}

// deadLetteredAt says when a dead job entered the DLQ: the runtime's send, or, for a job the
// queue's RedrivePolicy moved, unknown — SQS keeps the message's SentTimestamp on such a move and
// no attribute gives the time of the move, so the send time is shown as what it is.
func deadLetteredAt(j *inspect.DeadJob) string {
	switch {
	case !j.DeadLetteredAt.IsZero():
		return j.DeadLetteredAt.Format(time.RFC3339Nano)
	case !j.ByRedrivePolicy():
		return "" // no SentTimestamp: nothing says
	case j.SentAt.IsZero():
		return "unknown (moved by the queue's redrive policy)"
	}
	return "unknown (moved by the queue's redrive policy; sent at " + j.SentAt.Format(time.RFC3339Nano) + ")"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
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
					d.Total(), safe(awsarn.QueueName(q.DLQURL), nameWidth))
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
			fmt.Fprintf(s.stdout, "purged %s (about %d messages; SQS finishes within 60 s)\n", safe(awsarn.QueueName(q.DLQURL), nameWidth), n)
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
