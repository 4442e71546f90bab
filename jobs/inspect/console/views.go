package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// Widths, in runes, of what the lists show of a value; the envelope view has it whole.
const (
	fieldWidth   = 200     // an id, kind, reason, queue name in a table
	errorWidth   = 300     // an error in a table
	previewWidth = 160     // a body in a list
	bodyWidth    = 1 << 20 // a body or envelope in the envelope view
)

// text makes job data safe to show: control characters, bidirectional overrides and bytes that
// are not UTF-8 become visible escapes (inspect.Printable), cut at width runes. HTML escaping is
// html/template's (the page) or the script's textContent (live updates).
func text(s string, width int) string { return inspect.Printable(s, width) }

// multiline is text for a value of several lines (inspect.PrintableLines).
func multiline(s string, width int) string { return inspect.PrintableLines(s, width) }

// countsView are a queue's counts as the page and /api/queues show them.
type countsView struct {
	Name     string `json:"name"`
	FIFO     bool   `json:"fifo"`
	Visible  int64  `json:"visible"`
	InFlight int64  `json:"in_flight"`
	Delayed  int64  `json:"delayed"`
	// Total is every message the queue holds: visible, in flight and delayed. A dead-letter
	// queue's depth is its total: a dead job someone is looking at (in flight for a moment) is
	// still dead.
	Total int64 `json:"total"`
	// OldestAge is the oldest message's age ("4m10s"), "" when unknown.
	OldestAge        string `json:"oldest_age"`
	OldestAgeSeconds *int64 `json:"oldest_age_seconds"`
}

// queueView is one queue of /api/queues.
type queueView struct {
	countsView
	// Paused: the queue is paused (inspect.Inspector.SetQueuePaused); its consumers receive nothing.
	Paused bool        `json:"paused"`
	DLQ    *countsView `json:"dlq"`
}

func toCounts(s *inspect.QueueStats) countsView {
	c := countsView{Name: text(s.Name, fieldWidth), FIFO: s.FIFO, Visible: s.Visible, InFlight: s.InFlight, Delayed: s.Delayed, Total: s.Total()}
	if s.OldestAgeSource != inspect.AgeUnknown {
		secs := int64(s.OldestAge / time.Second)
		c.OldestAgeSeconds = &secs
		c.OldestAge = (time.Duration(secs) * time.Second).String()
	}
	return c
}

func toQueueViews(rep *inspect.StatsReport) []queueView {
	out := make([]queueView, len(rep.Queues))
	for n := range rep.Queues {
		q := &rep.Queues[n]
		out[n] = queueView{countsView: toCounts(q), Paused: q.Paused}
		if q.DLQ != nil {
			d := toCounts(q.DLQ)
			out[n].DLQ = &d
		}
	}
	return out
}

// deadView is one dead job in a listing: every value made safe, the body cut to a preview.
type deadView struct {
	MessageID      string `json:"message_id"`
	JobID          string `json:"job_id"`
	Kind           string `json:"kind"`
	Reason         string `json:"reason"`
	Error          string `json:"error"`
	Attempts       int    `json:"attempts"`
	Function       string `json:"function"`
	FirstReceived  string `json:"first_received_at"`
	FailedAt       string `json:"failed_at"`
	DeadLetteredAt string `json:"dead_lettered_at"`
	SourceQueue    string `json:"source_queue"`
	GroupID        string `json:"group_id"`
	// Body is the start of the body; BodyBytes its full size; Cut says the preview is shorter.
	Body      string `json:"body"`
	BodyBytes int    `json:"body_bytes"`
	Cut       bool   `json:"body_cut"`
	// Hidden says the body was left out (Options.HideBodies); BodyBytes still gives its size.
	Hidden bool `json:"body_hidden,omitempty"`
	// Ref is what /api/envelope and the page take to show this job: its job id, or message id.
	Ref string `json:"ref"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func toDeadView(j *inspect.DeadJob) deadView {
	preview := text(j.Body, previewWidth)
	ref := j.JobID
	ref = cmp.Or(ref, j.MessageID)
	return deadView{
		MessageID: text(j.MessageID, fieldWidth), JobID: text(j.JobID, fieldWidth), Kind: text(j.Kind, fieldWidth),
		Reason: text(j.Reason, fieldWidth), Error: text(j.Error, errorWidth), Attempts: j.Attempts,
		Function: text(j.Function, fieldWidth), FirstReceived: stamp(j.FirstReceivedAt), FailedAt: stamp(j.FailedAt),
		DeadLetteredAt: stamp(j.DeadLetteredAt), SourceQueue: text(j.SourceQueue, fieldWidth), GroupID: text(j.GroupID, fieldWidth),
		Body: preview, BodyBytes: len(j.Body), Cut: preview != text(j.Body, 0),
		// The raw ref goes back to the server in a query string: it must be the real id, and it
		// is only ever put in a URL (escaped by html/template or encodeURIComponent).
		Ref: ref,
	}
}

// hideBody leaves the body out, keeping its size.
func (v *deadView) hideBody() { v.Body, v.Cut, v.Hidden = "", false, true }

// envelopeView is one dead job with its whole body: the envelope indented when the body is one.
type envelopeView struct {
	deadView
	Envelope   string            `json:"envelope"` // indented JSON; "" when the body is not an envelope
	FullBody   string            `json:"full_body"`
	Attributes map[string]string `json:"attributes"` // the message attributes that are not jobkit's
}

func toEnvelopeView(j *inspect.DeadJob) envelopeView {
	v := envelopeView{deadView: toDeadView(j), FullBody: multiline(j.Body, bodyWidth)}
	if j.Envelope != nil {
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(j.Body), "", "  ") == nil {
			v.Envelope = multiline(buf.String(), bodyWidth)
		}
	}
	for k, a := range j.Attributes {
		if v.Attributes == nil {
			v.Attributes = map[string]string{}
		}
		val := ""
		if a.StringValue != nil {
			val = *a.StringValue
		} else if a.BinaryValue != nil {
			val = "(binary, " + itoa(len(a.BinaryValue)) + " bytes)"
		}
		v.Attributes[text(k, fieldWidth)] = text(val, errorWidth)
	}
	return v
}

// scheduleView is one schedule of /api/schedules.
type scheduleView struct {
	Group      string   `json:"group"`
	Name       string   `json:"name"`
	JobName    string   `json:"job_name"` // the name declared in Go (scheduler.Schedule.Name)
	Kind       string   `json:"kind"`
	Expression string   `json:"expression"`
	TimeZone   string   `json:"time_zone"`
	State      string   `json:"state"`
	Target     string   `json:"target"`
	Next       []string `json:"next"`
	Problem    string   `json:"problem"`
	// Last is the last fire time; LastJobID the job that tick sent, and LastState its state
	// from the job state table ("" when unknown: no table, or no state recorded).
	Last      string `json:"last,omitempty"`
	LastJobID string `json:"last_job_id,omitempty"`
	LastState string `json:"last_state,omitempty"`
}

func toScheduleViews(in []inspect.ScheduleInfo) []scheduleView {
	out := make([]scheduleView, len(in))
	for n, s := range in {
		v := scheduleView{
			Group: text(s.Group, fieldWidth), Name: text(s.Name, fieldWidth), JobName: text(s.JobName, fieldWidth), Kind: text(s.Kind, fieldWidth),
			Expression: text(s.Expression, fieldWidth),
			TimeZone:   text(s.TimeZone, fieldWidth), State: text(s.State, fieldWidth), Target: text(s.TargetARN, fieldWidth),
			Problem: text(s.Problem, errorWidth), Next: []string{},
		}
		v.TimeZone = cmp.Or(v.TimeZone, "UTC")
		for _, t := range s.Next {
			v.Next = append(v.Next, stamp(t))
		}
		if s.Last != nil {
			v.Last, v.LastJobID = stamp(*s.Last), text(s.LastJobID, fieldWidth)
		}
		out[n] = v
	}
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// statusRow is one line of the job status panel.
type statusRow struct {
	Name  string
	Value string
	Field string // data-field of the value cell
}

// safeStatus is st with every string made safe like job data (ids, kinds, errors and results
// come from whoever enqueued or ran the job).
func safeStatus(st jobs.JobStatus) jobs.JobStatus {
	st.ID, st.Kind, st.Queue, st.Batch = text(st.ID, fieldWidth), text(st.Kind, fieldWidth), text(st.Queue, fieldWidth), text(st.Batch, fieldWidth)
	st.LastError, st.Reason, st.DuplicateOf = multiline(st.LastError, bodyWidth), text(st.Reason, fieldWidth), text(st.DuplicateOf, fieldWidth)
	if st.Progress != nil {
		p := *st.Progress
		p.Note = text(p.Note, fieldWidth)
		st.Progress = &p
	}
	if len(st.Result) > 0 {
		if r := multiline(string(st.Result), bodyWidth); json.Valid([]byte(r)) {
			st.Result = json.RawMessage(r)
		} else {
			st.Result = nil
		}
	}
	return st
}

// statusRows lays out a job's status for the page: the fields it has, in a fixed order.
func statusRows(st jobs.JobStatus) []statusRow {
	st = safeStatus(st)
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000")
	}
	all := []statusRow{
		{"job id", st.ID, "id"},
		{"kind", st.Kind, "kind"},
		{"state", string(st.State), "state"},
		{"since (UTC)", ts(st.Since), "since"},
		{"attempt", func() string {
			if st.Attempt == 0 {
				return ""
			}
			return strconv.Itoa(st.Attempt)
		}(), "attempt"},
		{"progress", func() string {
			if st.Progress == nil {
				return ""
			}
			return strconv.FormatFloat(st.Progress.Percent, 'f', -1, 64) + "% " + st.Progress.Note + " (" + ts(st.Progress.At) + ")"
		}(), "progress"},
		{"queue", st.Queue, "queue"},
		{"batch", st.Batch, "batch"},
		{"enqueued at (UTC)", ts(st.EnqueuedAt), "enqueued_at"},
		{"deliver at (UTC)", ts(st.DeliverAt), "deliver_at"},
		{"next attempt at (UTC)", ts(st.NextAttemptAt), "next_attempt_at"},
		{"finished at (UTC)", ts(st.FinishedAt), "finished_at"},
		{"reason", st.Reason, "reason"},
		{"last error", st.LastError, "last_error"},
		{"duplicate of", st.DuplicateOf, "duplicate_of"},
		{"result", string(st.Result), "result"},
	}
	rows := all[:0]
	for _, r := range all {
		if r.Value != "" {
			rows = append(rows, r)
		}
	}
	return rows
}
