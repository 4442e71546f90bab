package esm

import "sync"

// Settled keeps what settled batches did with each message, by SQS message id: deleted, or
// listed failed (batchItemFailures). Its Record is an Options.OnBatch; a program watching a
// stack's mappings (devstack.Config.OnBatch) calls it with each report.
type Settled struct {
	mu      sync.Mutex
	deleted map[string]bool
	failed  map[string]bool
}

// Record notes what rep's batch did with its messages.
func (s *Settled) Record(rep BatchReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted == nil {
		s.deleted, s.failed = map[string]bool{}, map[string]bool{}
	}
	for _, id := range rep.Deleted {
		s.deleted[id] = true
	}
	for _, id := range rep.Failed {
		s.failed[id] = true
	}
}

// Deleted reports whether a batch deleted the message.
func (s *Settled) Deleted(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deleted[id]
}

// Failed reports whether a batch listed the message failed.
func (s *Settled) Failed(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed[id]
}
