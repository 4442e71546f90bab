package tally

import (
	"cmp"
	"sync"
)

// Book records what each job of a run did, keyed by job id. It is safe for concurrent use.
type Book struct {
	mu    sync.Mutex
	jobs  map[string]*entry
	order []*entry
	msgs  map[string]*message // by SQS message id
}

// entry is a job as the Book keeps it: its Job (less what its messages say) and its messages.
type entry struct {
	job  Job
	msgs []*message
}

// message is one SQS message carrying a job: the mapping deleted it, the runtime dead-lettered it.
type message struct {
	job                   *entry
	deleted, deadLettered bool
}

// NewBook returns an empty Book.
func NewBook() *Book {
	return &Book{jobs: map[string]*entry{}, msgs: map[string]*message{}}
}

// Track records a job the run enqueued (or a schedule sent) to queue: until a worker receives it,
// it is Unseen. Tracking a job again changes nothing.
func (b *Book) Track(id, kind, queue string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entry(id, kind, queue)
}

// Started records that a run of the job began (attempt: its number, 0 if unknown).
func (b *Book) Started(id string, attempt int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(id, "", "")
	e.job.Phase = InFlight
	e.job.Attempt = attempt
}

// Job returns what the Book knows of job id.
func (b *Book) Job(id string) (Job, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.jobs[id]
	if !ok {
		return Job{}, false
	}
	return e.snapshot(), true
}

// Jobs returns every job the Book knows, in the order it first heard of them.
func (b *Book) Jobs() []Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Job, len(b.order))
	for i, e := range b.order {
		out[i] = e.snapshot()
	}
	return out
}

// Settle sorts every job the Book knows by where it is at the end (see the package doc).
func (b *Book) Settle(end End) Tally { return Settle(b.Jobs(), end) }

// entry returns job id's entry, adding it when new; it fills in a kind or queue not known yet.
// The caller holds b.mu.
func (b *Book) entry(id, kind, queue string) *entry {
	e, ok := b.jobs[id]
	if !ok {
		e = &entry{job: Job{ID: id}}
		b.jobs[id] = e
		b.order = append(b.order, e)
	}
	e.job.Kind = cmp.Or(e.job.Kind, kind)
	e.job.Queue = cmp.Or(e.job.Queue, queue)
	return e
}

// message returns the message with SQS id mid, adding it to job id's entry when new. The caller
// holds b.mu.
func (b *Book) message(mid, id, kind, queue string) *message {
	if m, ok := b.msgs[mid]; ok {
		b.entry(m.job.job.ID, kind, queue) // fill in what the message's first event did not say
		return m
	}
	e := b.entry(id, kind, queue)
	m := &message{job: e}
	e.msgs = append(e.msgs, m)
	b.msgs[mid] = m
	return m
}

// snapshot returns the entry's Job with what its messages say. The caller holds the Book's mu.
func (e *entry) snapshot() Job {
	j := e.job
	j.Messages = len(e.msgs)
	for _, m := range e.msgs {
		if m.deleted && !m.deadLettered {
			j.DeletedAfterRun = true
		}
	}
	return j
}
