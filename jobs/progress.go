package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// maxProgressNote is the longest note ReportProgress keeps, in bytes.
const maxProgressNote = 200

// Progress is what a running job last reported with ReportProgress.
type Progress struct {
	Percent float64   `json:"percent"`        // 0-100
	Note    string    `json:"note,omitempty"` // a short note, at most 200 bytes
	At      time.Time `json:"at"`             // when it was reported
}

type progressKey struct{}

// WithProgress returns ctx with record, which ReportProgress calls: middleware that keeps job
// states installs it (jobs/state's Middleware writes at a bounded rate).
func WithProgress(ctx context.Context, record func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, record)
}

// errNoProgress is ReportProgress's error outside a job whose middleware records progress.
var errNoProgress = errors.New("jobs: ReportProgress: no progress is recorded here (a job run with jobs/state's Middleware records it)")

// ReportProgress records how far a running job is: percent from 0 to 100 and a short note (cut
// to 200 bytes). It returns at once; the state table's middleware writes it at a bounded rate
// (jobs/state: at most one write per MiddlewareOptions.ProgressInterval, the latest report
// kept), and Status, `jobkit job show` and the console show it while the job runs. Outside a
// job with job states it returns an error and records nothing.
func ReportProgress(ctx context.Context, percent float64, note string) error {
	record, _ := ctx.Value(progressKey{}).(func(Progress))
	if record == nil {
		return errNoProgress
	}
	if math.IsNaN(percent) || percent < 0 || percent > 100 {
		return fmt.Errorf("jobs: ReportProgress: percent %v is not within 0-100", percent)
	}
	if len(note) > maxProgressNote {
		note = note[:maxProgressNote]
		for !utf8.ValidString(note) {
			note = note[:len(note)-1]
		}
	}
	record(Progress{Percent: percent, Note: note, At: time.Now().UTC()})
	return nil
}
