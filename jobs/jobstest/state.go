package jobstest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// StateStore is an in-memory jobs.StateStore for tests of code that enqueues: it records the jobs
// a Client sends, holds unique keys for their windows and answers Status. Use jobs/state on the
// emulator to test the runtime's states and batches.
type StateStore struct {
	mu     sync.Mutex
	jobs   map[string]jobs.JobStatus
	unique map[string]uniqueHold
}

type uniqueHold struct {
	id    string
	until time.Time
}

var _ jobs.StateStore = (*StateStore)(nil)

// NewStateStore returns an empty StateStore.
func NewStateStore() *StateStore {
	return &StateStore{jobs: map[string]jobs.JobStatus{}, unique: map[string]uniqueHold{}}
}

// JobsEnqueued implements jobs.StateStore.
func (s *StateStore) JobsEnqueued(_ context.Context, list []jobs.PreparedJob) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range list {
		s.jobs[j.ID] = jobs.JobStatus{ID: j.ID, Kind: j.Kind, State: jobs.StateEnqueued, Queue: j.QueueURL, Batch: j.Batch,
			EnqueuedAt: j.EnqueuedAt, DeliverAt: j.DeliverAt, Since: j.EnqueuedAt}
	}
	return nil
}

// JobsNotSent implements jobs.StateStore.
func (s *StateStore) JobsNotSent(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.jobs, id)
	}
	return nil
}

// ReserveUnique implements jobs.StateStore.
func (s *StateStore) ReserveUnique(_ context.Context, kind, key, id string, until, now time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := kind + "#" + key
	if h, ok := s.unique[k]; ok && h.until.After(now) {
		return h.id, nil
	}
	s.unique[k] = uniqueHold{id: id, until: until}
	return id, nil
}

// ReleaseUnique implements jobs.StateStore.
func (s *StateStore) ReleaseUnique(_ context.Context, kind, key, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.unique[kind+"#"+key]; ok && h.id == id {
		delete(s.unique, kind+"#"+key)
	}
	return nil
}

// JobStatus implements jobs.StateStore.
func (s *StateStore) JobStatus(_ context.Context, id string) (jobs.JobStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.jobs[id]
	if !ok {
		return jobs.JobStatus{}, fmt.Errorf("%w: %q", jobs.ErrJobNotFound, id)
	}
	return st, nil
}

// JobSettled implements jobs.StateStore.
func (s *StateStore) JobSettled(_ context.Context, row *jobs.JobRow, st jobs.JobStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.jobs[row.ID]
	st.EnqueuedAt, st.DeliverAt = old.EnqueuedAt, old.DeliverAt
	s.jobs[row.ID] = st
	return nil
}

// CancelJob implements jobs.StateStore: a job enqueued or retrying becomes cancelled.
func (s *StateStore) CancelJob(_ context.Context, id, note string) (jobs.JobStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.jobs[id]
	switch {
	case !ok:
		return jobs.JobStatus{}, fmt.Errorf("%w: %q", jobs.ErrJobNotFound, id)
	case st.State == jobs.StateCancelled:
		return st, nil
	case st.State != jobs.StateEnqueued && st.State != jobs.StateRetrying:
		return st, &jobs.NotCancellableError{Status: st}
	}
	now := time.Now().UTC()
	st.State, st.Since, st.FinishedAt, st.LastError, st.Reason = jobs.StateCancelled, now, now, note, contract.ReasonCancelled
	st.NextAttemptAt = time.Time{}
	s.jobs[id] = st
	return st, nil
}

// JobRetryNow implements jobs.StateStore.
func (s *StateStore) JobRetryNow(_ context.Context, id, receipt string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.jobs[id]
	if !ok || st.State != jobs.StateRetrying || st.Receipt != receipt {
		return fmt.Errorf("%w: job %s", jobs.ErrNotWaiting, id)
	}
	st.NextAttemptAt, st.Receipt = now, ""
	s.jobs[id] = st
	return nil
}
