package console

import (
	"cmp"
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
	"github.com/jobkit-go/jobkit/jobs/contract"
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

// redriveRequest is POST /api/redrive's body: the queue, and the job ids (or message ids) to
// move, or all.
type redriveRequest struct {
	Queue string   `json:"queue"`
	IDs   []string `json:"ids"`
	All   bool     `json:"all"`
}

// readJSON decodes the request's JSON body as a T; a body that does not decode is answered 400,
// and ok is false.
func readJSON[T any](w http.ResponseWriter, r *http.Request) (req T, ok bool) {
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: %v", err)
		return req, false
	}
	return req, true
}

func (s *Server) apiRedrive(w http.ResponseWriter, r *http.Request) {
	req, ok := readJSON[redriveRequest](w, r)
	if !ok {
		return
	}
	if req.All == (len(req.IDs) > 0) || len(req.IDs) > 100 {
		writeError(w, http.StatusBadRequest, "give either all: true or 1-100 ids")
		return
	}
	q, err := s.queueWithDLQ(r.Context(), req.Queue)
	if err != nil {
		fail(w, err)
		return
	}
	total := int64(len(req.IDs))
	if req.All {
		if d, err := s.in.Depth(r.Context(), q.DLQURL); err == nil {
			total = d.Total()
		}
	}
	t := s.tasks.start(q.Name, total)
	go s.redrive(t, q, req)
	writeJSON(w, http.StatusAccepted, t)
}

// redrive moves the jobs of a request, one filtered manual move per id (or one move of all),
// sending each to the queue it came from when that is one of the DLQ's sources (see
// inspect.Inspector.Redrive): the queue itself, the DLQ's RedrivePolicy sources, the stack's.
func (s *Server) redrive(t *task, q inspect.Queue, req redriveRequest) {
	ctx := s.base
	o := inspect.RedriveOptions{Source: q.URL, InFlightWait: -1}
	stack := s.o.Target.Stack
	stack = cmp.Or(stack, contract.DefaultStack)
	// The deployed stack's queues on this DLQ are trusted destinations too (no stack: none).
	o.Sources, _ = s.in.StackSources(ctx, stack, q.DLQURL)
	var errs []error
	if req.All {
		o.Progress = func(p inspect.RedriveProgress) {
			s.tasks.update(t, func(t *task) { t.Moved, t.Skipped, t.Failed = p.Moved, p.Skipped, p.Failed })
		}
		res, err := s.in.Redrive(ctx, q.DLQURL, &o)
		errs = append(errs, err)
		s.tasks.update(t, func(t *task) { t.Moved, t.Failed = 0, 0; t.add(res) })
	} else {
		o.Method = inspect.RedriveManual
		for _, id := range req.IDs {
			one := o
			one.Filter = inspect.Filter{ID: id}
			res, err := s.in.Redrive(ctx, q.DLQURL, &one)
			errs = append(errs, err)
			s.tasks.update(t, func(t *task) { t.add(res) })
		}
	}
	s.tasks.update(t, func(t *task) {
		if err := errors.Join(errs...); err != nil {
			t.Error = text(err.Error(), 2000)
		}
		t.Done = true
	})
}

// purgeRequest is POST /api/purge's body: the queue whose DLQ to purge, and its DLQ's name again
// as the confirmation.
type purgeRequest struct {
	Queue   string `json:"queue"`
	Confirm string `json:"confirm"`
}

func (s *Server) apiPurge(w http.ResponseWriter, r *http.Request) {
	req, ok := readJSON[purgeRequest](w, r)
	if !ok {
		return
	}
	q, err := s.queueWithDLQ(r.Context(), req.Queue)
	if err != nil {
		fail(w, err)
		return
	}
	if want := awsarn.QueueName(q.DLQURL); req.Confirm != want {
		writeError(w, http.StatusBadRequest, "type the dead-letter queue's name (%s) to confirm the purge", want)
		return
	}
	n, err := s.in.Purge(r.Context(), q.DLQURL)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": text(q.Name, fieldWidth), "purged": n})
}

// jobRequest is POST /api/jobs/{cancel,retry}'s body: the job's id.
type jobRequest struct {
	ID string `json:"id"`
}

// apiJob cancels a job (cancel) or ends its backoff (retry) through Options.Jobs, and answers
// its status. A job past cancelling, or not waiting for a retry, is a 409 that says why.
func (s *Server) apiJob(w http.ResponseWriter, r *http.Request) {
	if s.o.Jobs == nil {
		writeError(w, http.StatusNotFound, "job actions: the job state table is not deployed")
		return
	}
	var req jobRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ID == "" || len(req.ID) > maxJobRef {
		writeError(w, http.StatusBadRequest, "give the job's id (1-%d bytes)", maxJobRef)
		return
	}
	var (
		st  jobs.JobStatus
		err error
	)
	switch r.PathValue("op") {
	case "cancel":
		st, err = s.o.Jobs.Cancel(r.Context(), req.ID)
	case "retry":
		st, err = s.o.Jobs.RetryNow(r.Context(), req.ID)
	default:
		writeError(w, http.StatusNotFound, "no such job action (cancel, retry)")
		return
	}
	switch {
	case errors.Is(err, jobs.ErrJobNotFound):
		writeError(w, http.StatusNotFound, "no state recorded for job %s", text(req.ID, fieldWidth))
	case errors.As(err, new(*jobs.NotCancellableError)), errors.Is(err, jobs.ErrNotWaiting):
		writeError(w, http.StatusConflict, "%s", text(err.Error(), errorWidth))
	case err != nil:
		fail(w, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"job": safeStatus(st)})
	}
}

// scheduleRequest is POST /api/schedules/{pause,resume,fire}'s body: the schedule's group and
// its name in Scheduler.
type scheduleRequest struct {
	Group string `json:"group"`
	Name  string `json:"name"`
}

// apiSchedule pauses, resumes or fires a schedule (inspect.Inspector.SetScheduleState and
// FireSchedule); changed is false when it was already paused (resumed).
func (s *Server) apiSchedule(w http.ResponseWriter, r *http.Request) {
	var req scheduleRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		writeError(w, http.StatusBadRequest, "give the schedule's group and name")
		return
	}
	if s.o.ScheduleGroup != "" && req.Group != s.o.ScheduleGroup {
		writeError(w, http.StatusForbidden, "this console shows schedule group %s only", text(s.o.ScheduleGroup, fieldWidth))
		return
	}
	ctx := r.Context()
	var (
		doc = map[string]any{"group": text(req.Group, fieldWidth), "name": text(req.Name, fieldWidth)}
		err error
	)
	switch op := r.PathValue("op"); op {
	case "pause", "resume":
		var changed bool
		changed, err = s.in.SetScheduleState(ctx, req.Group, req.Name, op == "resume")
		doc["changed"] = changed
	case "fire":
		var id, msg string
		id, msg, err = s.in.FireSchedule(ctx, req.Group, req.Name)
		doc["job_id"], doc["message_id"] = text(id, fieldWidth), text(msg, fieldWidth)
	default:
		writeError(w, http.StatusNotFound, "no such schedule action (pause, resume, fire)")
		return
	}
	switch {
	case errors.Is(err, inspect.ErrScheduleNotFound):
		writeError(w, http.StatusNotFound, "%s", text(err.Error(), errorWidth))
	case errors.Is(err, inspect.ErrNotAJobSchedule):
		writeError(w, http.StatusConflict, "%s", text(err.Error(), errorWidth))
	case err != nil:
		fail(w, err)
	default:
		writeJSON(w, http.StatusOK, doc)
	}
}

// apiQueueOp pauses or resumes a queue (inspect.Inspector.SetQueuePaused); the body names it
// ({"queue": name}); changed is false when it was already paused (resumed).
func (s *Server) apiQueueOp(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Queue string `json:"queue"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Queue == "" {
		writeError(w, http.StatusBadRequest, "give the queue's name")
		return
	}
	op := r.PathValue("op")
	if op != "pause" && op != "resume" {
		writeError(w, http.StatusNotFound, "no such queue action (pause, resume)")
		return
	}
	q, err := s.queue(r.Context(), req.Queue)
	if err != nil {
		fail(w, err)
		return
	}
	res, err := s.in.SetQueuePaused(r.Context(), q.URL, op == "pause")
	s.mu.Lock()
	s.paused = nil // read the pause states anew
	s.pauseGen++
	s.mu.Unlock()
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": text(q.Name, fieldWidth), "changed": res.Changed, "event_source_mappings": len(res.Mappings)})
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
