package console

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

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
