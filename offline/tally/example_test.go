package tally_test

import (
	"fmt"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// Record a run's events as they come, read where the jobs are at the end, and name the ones
// that went wrong. Here a poison job is dead-lettered, redriven and dead-lettered again (it is
// dead, not lost), one job succeeds, and one failed its third attempt and is nowhere.
func ExampleSettle() {
	b := tally.NewBook()
	for _, id := range []string{"poison", "fine", "gone"} {
		b.Track(id, "mail.send", "Mail")
	}
	env := func(id string) string { return `{"v":1,"id":"` + id + `","kind":"mail.send","args":{}}` }
	// The mappings' reports and the runtime's outcomes, in any order.
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m1", "m2", "m3"}, Bodies: []string{env("poison"), env("fine"), env("gone")},
		Verdict: esm.Partial, Deleted: []string{"m1", "m2"}, Failed: []string{"m3"}})
	b.Record(tally.Event{Type: tally.EventDeadLettered, JobID: "poison", MessageID: "m1", Attempt: 1, Reason: "cancelled"})
	b.Record(tally.Event{Type: tally.EventFailed, JobID: "gone", MessageID: "m3", Attempt: 3, Error: "smtp: 421"})
	// The redrive's copy of the poison job, dead-lettered again.
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m4"}, Bodies: []string{env("poison")}, Verdict: esm.AllSucceeded, Deleted: []string{"m4"}})
	b.Record(tally.Event{Type: tally.EventDeadLettered, JobID: "poison", MessageID: "m4", Attempt: 1, Reason: "cancelled"})

	t := b.Settle(tally.End{InDLQ: map[string]bool{"poison": true}, OnQueue: map[string]int{"Mail": 0}})
	fmt.Printf("succeeded=%d dead=%d stranded=%d lost=%d\n", t.Succeeded, t.Dead, len(t.Stranded), len(t.Lost))
	for _, line := range tally.Lines(t.Lost, 10) {
		fmt.Println("lost:", line)
	}
	// Output:
	// succeeded=1 dead=1 stranded=0 lost=1
	// lost: gone (mail.send, Mail): retrying, attempt 3, last error: smtp: 421
}
