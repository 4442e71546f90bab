package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// writeJSON answers v as JSON (the security headers are set by ServeHTTP).
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers {"error": ...}; the message is made safe like job data (it may quote some).
func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": text(fmt.Sprintf(format, args...), 2000)})
}

// fail answers err with the status it deserves.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway // AWS (or the emulator) said no
	switch {
	case errors.Is(err, errUnknownQueue), errors.Is(err, inspect.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, inspect.ErrNoDLQ):
		code = http.StatusConflict
	case errors.Is(err, inspect.ErrPurgeInProgress):
		code = http.StatusTooManyRequests
	}
	writeError(w, code, "%v", err)
}

// stats reads every queue's counts. Ages come from CloudWatch only: sampling would receive dead
// jobs every few seconds (see inspect.AgeSample).
func (s *Server) stats(ctx context.Context) ([]queueView, []string, error) {
	qs, err := s.queues(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	fresh := s.paused != nil && time.Since(s.pausedAt) < pauseEvery
	gen := s.pauseGen
	s.mu.Unlock()
	rep, err := s.in.Stats(ctx, qs, &inspect.StatsOptions{Age: inspect.AgeCloudWatch, NoPause: fresh})
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if fresh {
		for n := range rep.Queues {
			rep.Queues[n].Paused = s.paused[rep.Queues[n].URL]
		}
	} else if gen == s.pauseGen {
		s.paused, s.pausedAt = map[string]bool{}, time.Now()
		for _, q := range rep.Queues {
			s.paused[q.URL] = q.Paused
		}
	}
	s.mu.Unlock()
	return toQueueViews(rep), rep.Warnings, nil
}

func (s *Server) apiQueues(w http.ResponseWriter, r *http.Request) {
	views, warnings, err := s.stats(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	for i, wn := range warnings {
		warnings[i] = text(wn, errorWidth)
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": views, "warnings": warnings, "at": stamp(s.o.Now())})
}

// seriesView is one chart of /api/metrics: a queue's jobs per minute (Kind "": all of them).
type seriesView struct {
	Queue     string    `json:"queue"`
	Kind      string    `json:"kind,omitempty"`
	Minutes   []int64   `json:"minutes"` // Unix seconds of each minute's start
	Succeeded []float64 `json:"succeeded"`
	Retried   []float64 `json:"retried"`
	Dead      []float64 `json:"dead"`
}

// metricsWindow is how far back the charts reach.
const metricsWindow = time.Hour

// apiMetrics answers the charts: each queue's jobs succeeded, retried and dead per minute over
// the last hour, and each kind's (inspect.JobMetrics: CloudWatch on AWS; offline, the metrics the
// stack puts into the emulator's CloudWatch).
func (s *Server) apiMetrics(w http.ResponseWriter, r *http.Request) {
	qs, err := s.queues(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	names := make([]string, len(qs))
	shown := map[string]string{} // metric dimension → the queue's name on the page
	for n, q := range qs {
		names[n] = awsarn.QueueName(q.URL)
		shown[names[n]] = q.Name
	}
	views := []seriesView{}
	var warnings []string
	series, err := s.in.JobMetrics(r.Context(), names, metricsWindow)
	if err != nil {
		warnings = append(warnings, text("jobs per minute: CloudWatch failed ("+err.Error()+")", errorWidth))
	}
	for _, js := range series {
		v := seriesView{Queue: text(shown[js.Queue], fieldWidth), Kind: text(js.Kind, fieldWidth),
			Succeeded: js.Succeeded, Retried: js.Retried, Dead: js.Dead}
		for _, m := range js.Minutes {
			v.Minutes = append(v.Minutes, m.Unix())
		}
		views = append(views, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"series": views, "window_minutes": int(metricsWindow / time.Minute), "warnings": warnings})
}

// deadListView is /api/dead's answer.
type deadListView struct {
	Queue       string     `json:"queue"`
	Approximate int64      `json:"approximate_count"`
	Scanned     int        `json:"scanned"`
	Truncated   bool       `json:"truncated"`
	Jobs        []deadView `json:"jobs"`
}

func (s *Server) listDead(ctx context.Context, name string) (*deadListView, error) {
	q, err := s.queue(ctx, name)
	if err != nil {
		return nil, err
	}
	if q.DLQURL == "" {
		return nil, fmt.Errorf("%w: %s", inspect.ErrNoDLQ, name)
	}
	list, err := s.in.ListDead(ctx, q.DLQURL, &inspect.ListOptions{Limit: s.o.ListLimit, Visibility: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	v := &deadListView{Queue: text(q.Name, fieldWidth), Approximate: list.Approximate, Scanned: list.Scanned, Truncated: list.Truncated, Jobs: []deadView{}}
	for n := range list.Jobs {
		d := toDeadView(&list.Jobs[n])
		if s.o.HideBodies {
			d.hideBody()
		}
		v.Jobs = append(v.Jobs, d)
	}
	return v, nil
}

func (s *Server) apiDead(w http.ResponseWriter, r *http.Request) {
	v, err := s.listDead(r.Context(), r.URL.Query().Get("queue"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) envelope(ctx context.Context, name, id string) (*envelopeView, error) {
	q, err := s.queue(ctx, name)
	if err != nil {
		return nil, err
	}
	if q.DLQURL == "" {
		return nil, fmt.Errorf("%w: %s", inspect.ErrNoDLQ, name)
	}
	j, err := s.in.ShowDead(ctx, q.DLQURL, id, &inspect.ListOptions{Visibility: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	v := toEnvelopeView(j)
	if s.o.HideBodies {
		v.hideBody()
		v.Envelope, v.FullBody = "", ""
	}
	return &v, nil
}

func (s *Server) apiEnvelope(w http.ResponseWriter, r *http.Request) {
	v, err := s.envelope(r.Context(), r.URL.Query().Get("queue"), r.URL.Query().Get("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) schedules(ctx context.Context) ([]scheduleView, error) {
	list, err := s.in.Schedules(ctx, &inspect.ScheduleOptions{Group: s.o.ScheduleGroup})
	if err != nil {
		return nil, err
	}
	views := toScheduleViews(list)
	if s.o.States != nil {
		// How each schedule's last tick went: its job's state, 8 reads at a time.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for n := range list {
			if list[n].LastJobID == "" {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if st, err := s.o.States.JobStatus(ctx, list[n].LastJobID); err == nil {
					views[n].LastState = text(string(st.State), fieldWidth)
				}
			})
		}
		wg.Wait()
	}
	return views, nil
}

func (s *Server) apiSchedules(w http.ResponseWriter, r *http.Request) {
	v, err := s.schedules(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": v})
}

// apiStatus answers a job's status by id from the job state table (Options.States): 404 when the
// table is not deployed or holds no state for the job.
func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	if s.o.States == nil {
		writeError(w, http.StatusNotFound, "job status: the job state table is not deployed")
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" || len(id) > maxJobRef {
		writeError(w, http.StatusBadRequest, "job status: give a job id (1-%d bytes)", maxJobRef)
		return
	}
	st, err := s.o.States.JobStatus(r.Context(), id)
	if errors.Is(err, jobs.ErrJobNotFound) {
		writeError(w, http.StatusNotFound, "job status: no state recorded for job %s", text(id, fieldWidth))
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job": safeStatus(st)})
}

// maxJobRef is the longest job id the status lookup takes.
const maxJobRef = 512

func (s *Server) apiTask(w http.ResponseWriter, r *http.Request) {
	t, ok := s.tasks.get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "no such task")
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// jobListView is /api/jobs's answer, and the page's jobs section.
type jobListView struct {
	Queue string           `json:"queue"`
	State string           `json:"state"`
	Kind  string           `json:"kind,omitempty"`
	Jobs  []jobs.JobStatus `json:"jobs"`
	Next  string           `json:"next"`
}

// listJobs lists a queue's jobs in one state (state.Table.List), every string made safe.
func (s *Server) listJobs(ctx context.Context, queue string, st jobs.JobState, kind, cursor string, limit int) (*jobListView, error) {
	l, ok := s.o.States.(JobLister)
	if !ok {
		return nil, errNoStates
	}
	q, err := s.queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	page, err := l.List(ctx, state.ListOptions{Queue: q.URL, State: st, Kind: kind, Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	v := &jobListView{Queue: text(q.Name, fieldWidth), State: text(string(st), fieldWidth), Kind: text(kind, fieldWidth), Jobs: []jobs.JobStatus{}, Next: page.Next}
	for _, j := range page.Jobs {
		v.Jobs = append(v.Jobs, safeStatus(j))
	}
	return v, nil
}

// errNoStates: the console has no state table that lists jobs.
var errNoStates = errors.New("console: the job state table is not deployed: jobs cannot be listed by state")

// apiJobs answers GET /api/jobs?queue=NAME&state=STATE[&kind=K][&limit=N][&cursor=C]: a page of
// the queue's jobs in that state, newest first; 400 for an unknown state or a bad cursor, 404 for
// a queue the console does not show or no state table.
func (s *Server) apiJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "limit: want a number")
			return
		}
		limit = n
	}
	v, err := s.listJobs(r.Context(), q.Get("queue"), jobs.JobState(q.Get("state")), q.Get("kind"), q.Get("cursor"), limit)
	switch {
	case errors.Is(err, state.ErrBadListOptions):
		writeError(w, http.StatusBadRequest, "%s", text(err.Error(), errorWidth))
	case errors.Is(err, errNoStates):
		writeError(w, http.StatusNotFound, "%v", err)
	case err != nil:
		fail(w, err)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}
