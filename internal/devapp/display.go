package devapp

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Display shows a run's progress.
type Display interface {
	// Update shows a census taken elapsed after the start.
	Update(c *Census, elapsed time.Duration)
	// Note shows a line of text between updates.
	Note(text string)
}

// FormatTable renders the census as a table: one row per queue and a total row, with the columns
// enqueued, running, succeeded, retried and dead. The name column fits the longest queue name (a
// lane's, such as NotifyCritical), at least 10 wide.
func FormatTable(c *Census) string {
	var b strings.Builder
	width := 10
	for _, q := range c.Queues {
		width = max(width, len(q.Name))
	}
	row := func(name string, n Counts) {
		fmt.Fprintf(&b, "%-*s %9d %8d %10d %8d %6d\n", width, name, n.Enqueued, n.Running, n.Succeeded, n.Retried, n.Dead)
	}
	fmt.Fprintf(&b, "%-*s %9s %8s %10s %8s %6s\n", width, "QUEUE", "ENQUEUED", "RUNNING", "SUCCEEDED", "RETRIED", "DEAD")
	for _, q := range c.Queues {
		row(q.Name, q.Counts)
	}
	row("total", c.Total)
	return b.String()
}

// FormatLine renders the census as one line: per queue enqueued/running/succeeded/retried/dead.
func FormatLine(c *Census, elapsed time.Duration) string {
	var parts []string
	for _, q := range c.Queues {
		parts = append(parts, fmt.Sprintf("%s %d/%d/%d/%d/%d", q.Name, q.Enqueued, q.Running, q.Succeeded, q.Retried, q.Dead))
	}
	return fmt.Sprintf("dev %4.0fs  enqueued/running/succeeded/retried/dead  %s  | total %d/%d/%d/%d/%d",
		elapsed.Seconds(), strings.Join(parts, "  "),
		c.Total.Enqueued, c.Total.Running, c.Total.Succeeded, c.Total.Retried, c.Total.Dead)
}

// NewTableDisplay returns a Display for a terminal: a compact table redrawn in place.
func NewTableDisplay(w io.Writer, title string) Display {
	return &tableDisplay{w: w, title: title}
}

type tableDisplay struct {
	mu    sync.Mutex
	w     io.Writer
	title string
	lines int // lines drawn by the last update, to move back over
}

func (d *tableDisplay) Update(c *Census, elapsed time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	text := fmt.Sprintf("%s — %s\n", d.title, elapsed.Round(time.Second)) + FormatTable(c)
	var b strings.Builder
	if d.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.lines) // back to the first line of the table
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		b.WriteString("\x1b[2K") // clear the line before writing it
		b.WriteString(line)
	}
	d.lines = strings.Count(text, "\n")
	_, _ = io.WriteString(d.w, b.String())
}

func (d *tableDisplay) Note(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = io.WriteString(d.w, text+"\n")
	d.lines = 0 // the table is redrawn below the note
}

// NewLineDisplay returns a Display for logs and pipes: a plain line per update, at most one per
// every (0: every update).
func NewLineDisplay(w io.Writer, every time.Duration) Display {
	return &lineDisplay{w: w, every: every}
}

type lineDisplay struct {
	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	last  time.Duration
	shown bool
}

func (d *lineDisplay) Update(c *Census, elapsed time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shown && elapsed-d.last < d.every {
		return
	}
	d.shown, d.last = true, elapsed
	_, _ = io.WriteString(d.w, FormatLine(c, elapsed)+"\n")
}

func (d *lineDisplay) Note(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = io.WriteString(d.w, text+"\n")
}

// Summary is the outcome of a run, counted from the stack's records.
type Summary struct {
	Succeeded int // tracked jobs that succeeded
	Retried   int // tracked jobs that failed at least one attempt
	Dead      int // tracked jobs in a dead-letter queue
	Lost      int // tracked jobs neither succeeded nor dead-lettered nor still queued
	// Pending is the number of messages still in the job queues when the run ended (0 when drained).
	Pending int
}

// SummaryOf returns the summary of a full census.
func SummaryOf(c *Census) Summary {
	return Summary{Succeeded: c.Total.Succeeded, Retried: c.Total.Retried, Dead: c.Total.Dead, Lost: c.Lost, Pending: c.Total.Pending}
}

// String returns the summary line: "DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>".
func (s Summary) String() string {
	return fmt.Sprintf("DEV summary: succeeded=%d retried=%d dead=%d lost=%d", s.Succeeded, s.Retried, s.Dead, s.Lost)
}
