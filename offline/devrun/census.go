package devrun

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jobkit-go/jobkit/offline/tally"
)

// Counts is what became of the jobs of one queue (or all), counted from the stack's records: the
// event source mappings' reports, the runtime's outcomes and the queues' depths.
type Counts struct {
	Queued    int // messages waiting (visible or delayed)
	Running   int // messages in flight
	Succeeded int // jobs whose message was deleted after a run that did not dead-letter them
	Cancelled int // jobs cancelled before they ran (jobs.Client.Cancel), their messages deleted unrun
	Retried   int // jobs that failed at least one attempt
	Dead      int // messages in the dead-letter queue
}

// QueueCounts are the counts of one job queue.
type QueueCounts struct {
	Queue JobQueue
	Counts
}

// Census is a count of every job queue at one moment.
type Census struct {
	Queues []QueueCounts
	Total  Counts
	// Seen is the number of distinct jobs the mappings received (a redriven job counts once).
	Seen int
	// Lost counts the jobs received that neither succeeded, nor are in a dead-letter queue, nor
	// are still on their queue (Counter.Settle only; 0 otherwise).
	Lost int
	// Tally sorts the jobs received by where they ended, naming the lost and those still on their
	// queues (Counter.Settle only; nil otherwise).
	Tally *tally.Tally
}

// Summary returns the DEV summary line: "DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>
// cancelled=<n>".
func (c *Census) Summary() string {
	return fmt.Sprintf("DEV summary: succeeded=%d retried=%d dead=%d lost=%d cancelled=%d", c.Total.Succeeded, c.Total.Retried, c.Total.Dead, c.Lost, c.Total.Cancelled)
}

// LostLines names the lost jobs, one per line (at most tally.DefaultNamed, then "and N more"):
// "<id> (<kind>, <queue>): <last known state>".
func (c *Census) LostLines() []string {
	if c.Tally == nil {
		return nil
	}
	return tally.Lines(c.Tally.Lost, 0)
}

// LeftLines names the jobs still on their queues when the run ended (an interrupted run leaves
// some; they are not lost), like LostLines.
func (c *Census) LeftLines() []string {
	if c.Tally == nil {
		return nil
	}
	return tally.Lines(c.Tally.Stranded, 0)
}

// LostError returns nil when no job was lost, else an error naming them.
func (c *Census) LostError() error {
	if c.Lost == 0 {
		return nil
	}
	return fmt.Errorf("%d job(s) lost: %s", c.Lost, strings.Join(c.LostLines(), "; "))
}

// Line returns the census on one line, for a display that is not a terminal.
func (c *Census) Line() string {
	t := c.Total
	return fmt.Sprintf("dev: queued=%d running=%d succeeded=%d retried=%d dead=%d cancelled=%d", t.Queued, t.Running, t.Succeeded, t.Retried, t.Dead, t.Cancelled)
}

// Table returns the census as a table, a row per job queue and a total.
func (c *Census) Table() string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "queue\tqueued\trunning\tsucceeded\tretried\tdead\tcancelled\t")
	row := func(name string, n Counts) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, n.Queued, n.Running, n.Succeeded, n.Retried, n.Dead, n.Cancelled)
	}
	for _, q := range c.Queues {
		row(q.Queue.Name, q.Counts)
	}
	row("total", c.Total)
	_ = w.Flush()
	return b.String()
}
