package console

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

//go:embed assets
var assets embed.FS

// staticFS serves the script and the style sheet under /static/.
var staticFS = func() fs.FS {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err)
	}
	return sub
}()

var pageTemplate = template.Must(template.New("page.html").Funcs(template.FuncMap{"when": when, "at": at}).ParseFS(assets, "assets/page.html"))

// at shows a time as the tables do ("2026-11-21 12:05:00", UTC); "" for none.
func at(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// when shows an RFC 3339 UTC time the short way the tables use ("2026-11-21 12:05:00"; the
// column headers say UTC).
func when(s string) string {
	return strings.TrimSuffix(strings.Replace(s, "T", " ", 1), "Z")
}

// pageData is what page.html renders. Every string from AWS or a job went through text or
// multiline; html/template escapes it for its context.
type pageData struct {
	Token     string // "" in read-only mode: the page then has no way to act
	ReadOnly  bool
	Stack     string
	RefreshMS int64

	Queues      []queueView
	QueuesError string
	Warnings    []string

	Selected  string // the queue whose dead jobs are shown
	Dead      *deadListView
	DeadError string
	DLQName   string // what the purge confirmation asks to type

	JobRef   string
	Job      *envelopeView
	JobError string

	Schedules      []scheduleView
	SchedulesError string

	// The selected queue's jobs in one state (the state table's index): shown when States
	// lists jobs (JobLister).
	Listable   bool
	JobsState  string   // the state listed; default retrying
	JobsKind   string   // the kind filter
	JobsCursor string   // the page shown ("" the first)
	JobStates  []string // the states there are tabs for
	Jobs       *jobListView
	JobsError  string

	StateTable string
	HasStates  bool // the job state table is deployed: the status form is shown
	StatusID   string
	Status     string      // a message instead of a status (not found, an error)
	StatusRows []statusRow // the status of StatusID
	// CanCancel and CanRetry show the status panel's actions (not read-only, Options.Jobs set):
	// cancel for a job not started, retry now for one waiting out its backoff.
	CanCancel, CanRetry bool
}

// page renders the console: queues, the selected queue's dead jobs, a selected job's envelope,
// schedules and the job status panel. Sections are read concurrently; a failing one shows its
// error and the rest still renders.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	d := &pageData{
		ReadOnly: s.o.ReadOnly, Stack: text(s.stack(), fieldWidth), RefreshMS: s.o.Refresh.Milliseconds(),
		Selected: q.Get("queue"), JobRef: q.Get("job"), StateTable: text(s.o.StateTable, fieldWidth), StatusID: q.Get("status"),
		JobsState: cmp.Or(q.Get("jobs"), string(jobs.StateRetrying)), JobsKind: q.Get("kind"), JobsCursor: q.Get("cursor"),
	}
	_, d.Listable = s.o.States.(JobLister)
	if !s.o.ReadOnly {
		d.Token = s.token
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.pageQueues(ctx, d) })
	wg.Go(func() { s.pageSchedules(ctx, d) })
	if d.Selected != "" {
		wg.Go(func() { s.pageDead(ctx, d) })
		if d.Listable {
			wg.Go(func() { s.pageJobs(ctx, d) })
		}
	}
	wg.Wait()
	s.pageStatus(ctx, d)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "render: %v", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// pageJobs lists the selected queue's jobs in the state the page asks for.
func (s *Server) pageJobs(ctx context.Context, d *pageData) {
	for _, st := range []jobs.JobState{jobs.StateEnqueued, jobs.StateRunning, jobs.StateRetrying, jobs.StateSucceeded, jobs.StateDead, jobs.StateCancelled} {
		d.JobStates = append(d.JobStates, string(st))
	}
	v, err := s.listJobs(ctx, d.Selected, jobs.JobState(d.JobsState), d.JobsKind, d.JobsCursor, 0)
	if err != nil {
		d.JobsError = text(err.Error(), 2000)
		return
	}
	d.Jobs = v
}

// pageStatus looks up the job status the page asks for, if any.
func (s *Server) pageStatus(ctx context.Context, d *pageData) {
	d.HasStates = s.o.States != nil
	if d.StatusID == "" || !d.HasStates {
		return
	}
	if len(d.StatusID) > maxJobRef {
		d.Status = "a job id is at most 512 bytes"
		return
	}
	st, err := s.o.States.JobStatus(ctx, d.StatusID)
	switch {
	case errors.Is(err, jobs.ErrJobNotFound):
		d.Status = "no state recorded for this job (never sent with a state table, or expired)"
	case err != nil:
		d.Status = text(err.Error(), 2000)
	default:
		d.StatusRows = statusRows(st)
		acts := s.o.Jobs != nil && !s.o.ReadOnly
		d.CanCancel = acts && (st.State == jobs.StateEnqueued || st.State == jobs.StateRetrying)
		d.CanRetry = acts && st.State == jobs.StateRetrying
	}
}

func (s *Server) stack() string {
	if s.o.Target.Stack == "" {
		return contract.DefaultStack
	}
	return s.o.Target.Stack
}

func (s *Server) pageQueues(ctx context.Context, d *pageData) {
	views, warnings, err := s.stats(ctx)
	if err != nil {
		d.QueuesError = text(err.Error(), 2000)
		return
	}
	d.Queues = views
	for _, wn := range warnings {
		d.Warnings = append(d.Warnings, text(wn, errorWidth))
	}
}

func (s *Server) pageSchedules(ctx context.Context, d *pageData) {
	v, err := s.schedules(ctx)
	if err != nil {
		d.SchedulesError = text(err.Error(), 2000)
		return
	}
	d.Schedules = v
}

// pageDead lists the selected queue's dead jobs, then (not at the same time: a listing hides
// what it reads) the selected job's envelope.
func (s *Server) pageDead(ctx context.Context, d *pageData) {
	if q, err := s.queue(ctx, d.Selected); err == nil && q.DLQURL != "" {
		d.DLQName = text(awsarn.QueueName(q.DLQURL), fieldWidth)
	}
	v, err := s.listDead(ctx, d.Selected)
	if err != nil {
		d.DeadError = text(err.Error(), 2000)
	} else {
		d.Dead = v
	}
	if d.JobRef == "" {
		return
	}
	job, err := s.envelope(ctx, d.Selected, d.JobRef)
	if err != nil {
		d.JobError = text(err.Error(), 2000)
		return
	}
	d.Job = job
}
