package devapp_test

import (
	"fmt"
	"os"

	"github.com/jobkit-go/jobkit/internal/devapp"
)

// The live table `jobkit dev` redraws on a terminal, and the summary it ends with.
func ExampleFormatTable() {
	c := &devapp.Census{Queues: []devapp.QueueCensus{
		{Name: "Email", Counts: devapp.Counts{Enqueued: 100, Running: 4, Succeeded: 80, Retried: 10, Dead: 2}},
		{Name: "Ledger", Counts: devapp.Counts{Enqueued: 60, Running: 10, Succeeded: 41, Retried: 3, Dead: 1}},
		{Name: "Transcode", Counts: devapp.Counts{Enqueued: 7, Running: 2, Succeeded: 3, Retried: 1, Dead: 1}},
	}}
	for _, q := range c.Queues {
		c.Total.Add(q.Counts)
	}
	fmt.Print(devapp.FormatTable(c))
	fmt.Println(devapp.Summary{Succeeded: 158, Retried: 19, Dead: 9})
	// Output:
	// QUEUE       ENQUEUED  RUNNING  SUCCEEDED  RETRIED   DEAD
	// Email            100        4         80       10      2
	// Ledger            60       10         41        3      1
	// Transcode          7        2          3        1      1
	// total            167       16        124       14      4
	// DEV summary: succeeded=158 retried=19 dead=9 lost=0
}

// A workload is plain data: the jobs it enqueues, and the outcome each one's faults imply.
func ExampleWorkload() {
	w := devapp.Workload{Emails: 3, EmailPoison: 1, Accounts: 1, Postings: 2, PostingRetries: 1, Seed: 1}
	jobs, err := w.Jobs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, j := range jobs {
		outcome, reason := devapp.Expect(j.Faults, 5)
		line := fmt.Sprintf("%s %s %s", j.Queue, j.Args.Kind(), outcome)
		if reason != "" {
			line += " (" + reason + ")"
		}
		fmt.Println(line)
	}
	// Output:
	// Email email.send succeeds
	// Email email.send succeeds
	// Email email.send dead-lettered (cancelled)
	// Ledger ledger.post succeeds
	// Ledger ledger.post succeeds
}
