package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// queuesJSON is the document `jobkit queues --json` prints (docs/cli.md).
type queuesJSON struct {
	Version  int         `json:"version"`
	Queues   []queueJSON `json:"queues"`
	Warnings []string    `json:"warnings"`
}

// queueJSON is one queue of queuesJSON.
type queueJSON struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	countsJSON
	Paused      bool          `json:"paused"`
	PausedSince *time.Time    `json:"paused_since"`
	DLQ         *dlqStatsJSON `json:"dlq"`
}

// queueActionJSON is the document `jobkit queues pause|resume --json` prints (docs/cli.md).
type queueActionJSON struct {
	Version  int      `json:"version"`
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Action   string   `json:"action"`  // paused, resumed
	Changed  bool     `json:"changed"` // false: it was already paused (resumed)
	Mappings []string `json:"event_source_mappings"`
}

// dlqStatsJSON is a queue's dead-letter queue in queueJSON.
type dlqStatsJSON struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	countsJSON
}

// countsJSON are the counts and age shared by queues and DLQs.
type countsJSON struct {
	FIFO             bool   `json:"fifo"`
	Visible          int64  `json:"visible"`
	InFlight         int64  `json:"in_flight"`
	Delayed          int64  `json:"delayed"`
	OldestAgeSeconds *int64 `json:"oldest_age_seconds"`
	OldestAgeSource  string `json:"oldest_age_source"`
}

func toCounts(s *inspect.QueueStats) countsJSON {
	c := countsJSON{FIFO: s.FIFO, Visible: s.Visible, InFlight: s.InFlight, Delayed: s.Delayed, OldestAgeSource: string(s.OldestAgeSource)}
	if s.OldestAgeSource != inspect.AgeUnknown {
		secs := int64(s.OldestAge / time.Second)
		c.OldestAgeSeconds = &secs
	}
	return c
}

func parseAgeMode(s string) (inspect.AgeMode, error) {
	switch s {
	case "auto", "":
		return inspect.AgeAuto, nil
	case "cloudwatch":
		return inspect.AgeCloudWatch, nil
	case "sample":
		return inspect.AgeSample, nil
	case "off":
		return inspect.AgeOff, nil
	}
	return 0, usageError{fmt.Errorf("--age must be auto, cloudwatch, sample or off, not %q", s)}
}

func newQueuesCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		age    string
		mode   inspect.AgeMode
	)
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Show each queue's depth, in-flight, delayed, oldest age and DLQ depth",
		Long: `Show, for each queue and its dead-letter queue: messages visible (ready), in flight
(received, not yet deleted), delayed, and the age of the oldest message.

Counts are SQS's approximate counts. The oldest age is not a queue attribute: --age says
where it comes from.
  auto        CloudWatch's ApproximateAgeOfOldestMessage (AWS; a few minutes behind). Where
              CloudWatch has no answer (the offline emulator), DLQs are sampled (harmless
              there) and job queues show "-".
  cloudwatch  CloudWatch only.
  sample      receive up to 10 messages of every queue for 1 s and hand them back: works on
              any endpoint, but each sampled job's receive count goes up by one, which spends
              one of its attempts. A lower bound on Standard queues.
  off         no ages.`,
		Example: `  # Every queue of the deployed stack (JobkitState)
  jobkit queues

  # Two queues by URL, as JSON
  jobkit queues -q https://sqs.us-east-1.amazonaws.com/123456789012/email \
                -q https://sqs.us-east-1.amazonaws.com/123456789012/ledger.fifo --json

  # On the emulator, with sampled ages (spends an attempt of each sampled job)
  jobkit --endpoint http://127.0.0.1:4566 queues --age sample`,
		Args: noArgs,
		PreRunE: func(*cobra.Command, []string) (err error) {
			mode, err = parseAgeMode(age)
			return err
		},
		RunE: a.verb(func(s *session, _ []string) error {
			qs, err := s.queues()
			if err != nil {
				return err
			}
			rep, err := s.in.Stats(s.ctx, qs, &inspect.StatsOptions{Age: mode})
			if err != nil {
				return err
			}
			return s.print(asJSON, func() any { return queuesDoc(rep) }, func(w io.Writer) {
				printQueues(w, rep)
				for _, warning := range rep.Warnings {
					fmt.Fprintln(s.stderr, "warning:", safeLines(warning, lineWidth))
				}
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
	cmd.Flags().StringVar(&age, "age", "auto", "where the oldest age comes from: auto, cloudwatch, sample, off")
	cmd.AddCommand(queueAction(a, true), queueAction(a, false))
	return cmd
}

// queueAction is `jobkit queues pause QUEUE` (pause true) or `jobkit queues resume QUEUE`.
func queueAction(a *app, pause bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short := "Resume a paused queue: its consumers receive again"
	if pause {
		verb, done = "pause", "paused"
		short = "Pause a queue: its consumers receive nothing until it is resumed; running jobs finish"
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   verb + " QUEUE",
		Short: short,
		Long: short + `.

QUEUE is a queue's name in the stack's outputs, its SQS name or its URL. Pausing tags the queue
jobkit:paused, which container workers read every 10 s, and disables the queue's Lambda event
source mappings; resuming enables the mappings the pause disabled and removes the tag. Nothing is
lost: messages stay in the queue, their receive counts untouched (they still expire after the
queue's retention period). Needs sqs:TagQueue, sqs:UntagQueue, sqs:ListQueueTags,
sqs:GetQueueAttributes, lambda:ListEventSourceMappings and lambda:UpdateEventSourceMapping.`,
		Example: "  jobkit queues " + verb + " Email",
		Args:    cobra.ExactArgs(1),
		RunE: a.verb(func(s *session, args []string) error {
			qs, err := s.in.Resolve(s.ctx, inspect.Target{Stack: s.a.stack, Queues: args})
			if err != nil {
				return err
			}
			q := qs[0]
			res, err := s.in.SetQueuePaused(s.ctx, q.URL, pause)
			if err != nil {
				return err
			}
			doc := queueActionJSON{Version: jsonVersion, Name: q.Name, URL: q.URL, Action: done, Changed: res.Changed, Mappings: res.Mappings}
			if doc.Mappings == nil {
				doc.Mappings = []string{}
			}
			return s.print(asJSON, func() any { return doc }, func(w io.Writer) {
				name := safe(q.Name, nameWidth)
				if !res.Changed {
					fmt.Fprintf(w, "queue %s: already %s, nothing changed\n", name, done)
					return
				}
				fmt.Fprintf(w, "queue %s %s (%d event source mappings %s)\n", name, done, len(res.Mappings), map[bool]string{true: "disabled", false: "enabled"}[pause])
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (schema in docs/cli.md)")
	return cmd
}

func queuesDoc(rep *inspect.StatsReport) queuesJSON {
	doc := queuesJSON{Version: jsonVersion, Queues: []queueJSON{}, Warnings: rep.Warnings}
	if doc.Warnings == nil {
		doc.Warnings = []string{}
	}
	for i := range rep.Queues {
		s := &rep.Queues[i]
		q := queueJSON{Name: s.Name, URL: s.URL, countsJSON: toCounts(s), Paused: s.Paused}
		if s.Paused && !s.PausedSince.IsZero() {
			since := s.PausedSince.UTC()
			q.PausedSince = &since
		}
		if s.DLQ != nil {
			q.DLQ = &dlqStatsJSON{Name: s.DLQ.Name, URL: s.DLQ.URL, countsJSON: toCounts(s.DLQ)}
		}
		doc.Queues = append(doc.Queues, q)
	}
	return doc
}

func printQueues(w io.Writer, rep *inspect.StatsReport) {
	tw := table(w, "QUEUE", "TYPE", "STATE", "VISIBLE", "IN FLIGHT", "DELAYED", "OLDEST", "DLQ", "DLQ IN FLIGHT", "DLQ OLDEST")
	for i := range rep.Queues {
		s := &rep.Queues[i]
		kind := "standard"
		if s.FIFO {
			kind = "fifo"
		}
		visible, inFlight, delayed, oldest := "-", "-", "-", "-"
		if s.URL != "" {
			visible, inFlight, delayed, oldest = itoa(s.Visible), itoa(s.InFlight), itoa(s.Delayed), ageText(s)
		}
		dlq, dlqInFlight, dlqOldest := "-", "-", "-"
		if s.DLQ != nil {
			dlq, dlqInFlight, dlqOldest = itoa(s.DLQ.Visible), itoa(s.DLQ.InFlight), ageText(s.DLQ)
		}
		state := "active"
		if s.Paused {
			state = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safe(s.Name, nameWidth), kind, state, visible, inFlight, delayed, oldest, dlq, dlqInFlight, dlqOldest)
	}
	tw.Flush()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ageText renders an age; a sampled age is a lower bound, marked with "≥".
func ageText(s *inspect.QueueStats) string {
	switch s.OldestAgeSource {
	case inspect.AgeUnknown:
		return "-"
	case inspect.AgeFromSample:
		return "≥" + s.OldestAge.Truncate(time.Second).String()
	default:
		return s.OldestAge.Truncate(time.Second).String()
	}
}

// noArgs refuses positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

// table returns a writer of columns two spaces apart (flush it), its header line written.
func table(w io.Writer, header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	return tw
}
