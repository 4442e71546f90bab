package instrument

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/jobkit-go/jobkit/jobs"
)

// StartEvent is the value of the "instrument" field of the lines StartLog writes.
const StartEvent = "job_started"

// Start is one line StartLog writes: a job's handler was called for a real run.
type Start struct {
	Event   string `json:"instrument"` // StartEvent
	JobID   string `json:"job_id"`
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt"`
}

// StartLog returns the middleware that writes one JSON line (a Start) to w each time a job's
// handler is called, before it runs. Put it first (outermost): a line then means the runtime ran
// the job — a real run, charged as an attempt, whatever the middleware inside then does (an
// idempotency claim that fails counts, as a failure of the run) — which a delivery not started at
// the deadline or skipped behind a failed FIFO job never has. Lines from concurrent jobs are
// written whole.
func StartLog(w io.Writer) jobs.Middleware {
	var mu sync.Mutex
	return func(next jobs.Handler) jobs.Handler {
		return func(ctx context.Context, row *jobs.JobRow) error {
			b, err := json.Marshal(Start{Event: StartEvent, JobID: row.ID, Kind: row.Kind, Attempt: row.Attempt})
			if err == nil {
				mu.Lock()
				_, _ = w.Write(append(b, '\n'))
				mu.Unlock()
			}
			return next(ctx, row)
		}
	}
}

// startNeedle is what every StartLog line holds.
var startNeedle = []byte(`"instrument":"` + StartEvent + `"`)

// ParseStart reads a Start from one line of a function's output (with or without a prefix
// before the JSON object); ok is false for any other line.
func ParseStart(line []byte) (s Start, ok bool) {
	if !bytes.Contains(line, startNeedle) {
		return Start{}, false
	}
	i := bytes.IndexByte(line, '{')
	if i < 0 || json.Unmarshal(bytes.TrimSpace(line[i:]), &s) != nil || s.Event != StartEvent {
		return Start{}, false
	}
	return s, true
}
