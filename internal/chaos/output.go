package chaos

import (
	"bytes"
	"io"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/jobs/event"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// outputWatch passes the functions' output on and reads, from each line: the injected
// failures, the real runs per job id (the runtime's started events), the runtime's outcomes (tally.ParseLine,
// recorded in book) and among them the records not started because their batch had reached its
// deadline, per message id.
type outputWatch struct {
	w        io.Writer
	book     *tally.Book
	failures atomic.Int64

	mu         sync.Mutex
	runs       map[string]int
	notStarted map[string]int

	// onStart and onDone, if set, see each job body's start and each transcode's done line.
	onStart   func(jobID string, attempt int)
	onDone    func(jobID string)
	callbacks map[string]int // batch callback lines per batch id
}

var injectedNeedle = []byte(instrument.ErrInjected.Error())

func newOutputWatch(w io.Writer, book *tally.Book) *outputWatch {
	return &outputWatch{w: w, book: book, runs: map[string]int{}, notStarted: map[string]int{}, callbacks: map[string]int{}}
}

func (o *outputWatch) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		if bytes.Contains(line, injectedNeedle) {
			o.failures.Add(1)
		}
		o.readCallback(line)
		if e, ok := event.Parse(line); ok && e.Type == event.Started {
			o.mu.Lock()
			o.runs[e.JobID]++
			o.mu.Unlock()
			o.book.Started(e.JobID, e.Attempt)
			if o.onStart != nil {
				o.onStart(e.JobID, e.Attempt)
			}
		}
		if id, ok := transcodeDone(line); ok && o.onDone != nil {
			o.onDone(id)
		}
		o.readOutcome(line)
	}
	return o.w.Write(p)
}

// readOutcome records the runtime's outcome in line, if it is one (an event line), and counts the
// records not started at their batch's deadline (event.NoteBatchDeadline, the soft deadline passed
// before it could start, and event.NoteDeadlineNotStarted, still waiting at the hard stop) by
// message id.
func (o *outputWatch) readOutcome(line []byte) {
	e, ok := tally.ParseLine(line)
	if !ok {
		return
	}
	o.book.Record(e)
	if e.Type == tally.EventNotStarted && e.MessageID != "" {
		o.mu.Lock()
		o.notStarted[e.MessageID]++
		o.mu.Unlock()
	}
}

// runsByJob returns a copy of the real runs per job id.
func (o *outputWatch) runsByJob() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.runs)
}

// notStartedByMessage returns a copy of the not-started lines per message id.
func (o *outputWatch) notStartedByMessage() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.notStarted)
}

func (o *outputWatch) notStartedTotal() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, c := range o.notStarted {
		n += int64(c)
	}
	return n
}
