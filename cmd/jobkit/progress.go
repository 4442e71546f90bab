package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress display modes (--progress).
const (
	progressAuto  = "auto"  // a bar on a terminal, plain lines otherwise
	progressBar   = "bar"   // always a bar
	progressPlain = "plain" // always plain lines
	progressNone  = "none"  // nothing
)

// reporter shows the progress of a long verb on stderr.
type reporter interface {
	// update reports done of total (total <= 0: unknown) and a short detail.
	update(done, total int64, detail string)
	// finish ends the display; the caller prints the final count on stdout.
	finish()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// checkProgress validates a --progress value.
func checkProgress(mode string) error {
	switch mode {
	case progressAuto, "", progressBar, progressPlain, progressNone:
		return nil
	}
	return usageError{fmt.Errorf("--progress must be auto, bar, plain or none, not %q", mode)}
}

func newReporter(w io.Writer, mode, label string) (reporter, error) {
	switch mode {
	case progressAuto, "":
		if isTerminal(w) {
			return newBarReporter(w, label), nil
		}
		return newPlainReporter(w, label), nil
	case progressBar:
		return newBarReporter(w, label), nil
	case progressPlain:
		return newPlainReporter(w, label), nil
	case progressNone:
		return noReporter{}, nil
	}
	return nil, usageError{fmt.Errorf("--progress must be auto, bar, plain or none, not %q", mode)}
}

type noReporter struct{}

func (noReporter) update(int64, int64, string) {}
func (noReporter) finish()                     {}

// barReporter draws a progress bar (github.com/schollz/progressbar).
type barReporter struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
	max int64
}

func newBarReporter(w io.Writer, label string) *barReporter {
	bar := progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("jobs"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
	return &barReporter{bar: bar, max: -1}
}

func (b *barReporter) update(done, total int64, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if total > 0 && total != b.max {
		if done > total {
			total = done
		}
		b.bar.ChangeMax64(total)
		b.max = total
	}
	if detail != "" {
		b.bar.Describe(detail)
	}
	_ = b.bar.Set64(done)
}

func (b *barReporter) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.bar.IsFinished() {
		_ = b.bar.Finish()
	}
}

// plainReporter writes a line at every 10% step and at least every 2 s while something changes,
// for logs and pipes where a bar would be noise.
type plainReporter struct {
	mu       sync.Mutex
	w        io.Writer
	label    string
	lastStep int64
	lastAt   time.Time
	lastDone int64
	last     string // the latest line
	printed  string // the latest line written
}

func newPlainReporter(w io.Writer, label string) *plainReporter {
	return &plainReporter{w: w, label: label, lastStep: -1, lastDone: -1, lastAt: time.Now()}
}

func (p *plainReporter) line(done, total int64, detail string) string {
	s := fmt.Sprintf("%s: %d", p.label, done)
	if total > 0 {
		s += fmt.Sprintf("/%d (%d%%)", total, done*100/total)
	}
	if detail != "" {
		s += " " + detail
	}
	return s
}

func (p *plainReporter) update(done, total int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = p.line(done, total, detail)
	step := int64(-1)
	if total > 0 {
		step = done * 10 / total
	}
	now := time.Now()
	if (step != p.lastStep && total > 0) || (done != p.lastDone && now.Sub(p.lastAt) >= 2*time.Second) {
		fmt.Fprintln(p.w, p.last)
		p.lastStep, p.lastAt, p.lastDone, p.printed = step, now, done, p.last
	}
}

func (p *plainReporter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != "" && p.last != p.printed {
		fmt.Fprintln(p.w, p.last)
		p.printed = p.last
	}
}
