package tally_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/tally"
)

const body = `{"v":1,"id":"j1","kind":"mail.send","args":{}}`

// A job is one job across its messages: dead-lettered, redriven into a new message and
// dead-lettered again, it is one dead-lettered job with two messages — whichever comes first, the
// mapping's report or the runtime's line.
func TestBookFollowsAJobAcrossItsMessages(t *testing.T) {
	t.Parallel()
	b := tally.NewBook()
	b.Track("j1", "mail.send", "Mail")
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m1"}, Bodies: []string{body}, Verdict: esm.AllSucceeded, Deleted: []string{"m1"}})
	b.Record(tally.Event{Type: tally.EventDeadLettered, JobID: "j1", MessageID: "m1", Attempt: 1, Reason: "cancelled", Error: "poison"})
	b.Record(tally.Event{Type: tally.EventDeadLettered, JobID: "j1", MessageID: "m2", Attempt: 1, Reason: "cancelled", Error: "poison"})
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m2"}, Bodies: []string{body}, Verdict: esm.AllSucceeded, Deleted: []string{"m2"}})

	j, ok := b.Job("j1")
	require.True(t, ok)
	require.Equal(t, tally.Job{ID: "j1", Kind: "mail.send", Queue: "Mail", Phase: tally.DeadLettered, Attempt: 1, Deliveries: 2,
		Messages: 2, Reason: "cancelled", LastError: "poison"}, j)
	require.Equal(t, "j1 (mail.send, Mail): dead-lettered on attempt 1 (cancelled), last error: poison", j.String())
	require.Len(t, b.Jobs(), 1)
}

// A failed attempt leaves the job retrying with its attempt and error; a later delete without a
// dead-letter is a success as the runtime reports it; a line about a message already deleted
// changes nothing.
func TestBookRetryThenSuccess(t *testing.T) {
	t.Parallel()
	b := tally.NewBook()
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m1"}, Bodies: []string{body}, Verdict: esm.Partial, Failed: []string{"m1"}})
	b.Record(tally.Event{Type: tally.EventFailed, JobID: "j1", MessageID: "m1", Attempt: 3, Error: "boom"})
	j, _ := b.Job("j1")
	require.Equal(t, "retrying, attempt 3, last error: boom", j.State())
	require.True(t, j.Retried)
	require.Equal(t, 1, j.Failures)

	b.Started("j1", 4)
	j, _ = b.Job("j1")
	require.Equal(t, "in flight, attempt 4, last error: boom", j.State())

	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m1"}, Bodies: []string{body}, Verdict: esm.AllSucceeded, Deleted: []string{"m1"}})
	b.Record(tally.Event{Type: tally.EventFailed, JobID: "j1", MessageID: "m1", Attempt: 4, Error: "late"})
	j, _ = b.Job("j1")
	require.True(t, j.DeletedAfterRun)
	require.Equal(t, tally.Deleted, j.Phase)
	require.Equal(t, 2, j.Deliveries)
	require.Equal(t, 2, j.Failures, "a failed attempt reported after the delete still failed")
	require.Equal(t, "boom", j.LastError)
}

// A body that is not an envelope is a job of its own, named by the body (a redriven copy is the same
// job); a whole batch failing says why.
func TestBookBatchFailedAndForeignBodies(t *testing.T) {
	t.Parallel()
	b := tally.NewBook()
	b.OnBatch("Q", esm.BatchReport{MessageIDs: []string{"m1", "m2"}, Bodies: []string{"hello", body}, Verdict: esm.BatchFailed, Reason: "Timeout"})
	jobs := b.Jobs()
	require.Len(t, jobs, 2)
	id, kind := tally.Identify("hello")
	require.Equal(t, "body:2cf24dba5fb0a30e", id)
	require.Empty(t, kind)
	require.Equal(t, id+" (Q): retrying, last error: the batch failed: Timeout", jobs[0].String())
	require.Equal(t, "j1", jobs[1].ID)
	require.Equal(t, "never seen by a worker", tally.Job{ID: "x"}.State())
}

// A job an operator cancelled before it ran: its delivery reports it cancelled and the mapping
// deletes its message. It is cancelled — not a success, not lost — even where the run's own
// evidence of success (End.Succeeded) does not name it.
func TestBookCancelledJob(t *testing.T) {
	t.Parallel()
	b := tally.NewBook()
	b.Track("j1", "mail.send", "Mail")
	line := []byte(`[fn] {"event":"cancelled","job_id":"j1","message_id":"m1","kind":"mail.send"}`)
	b.ReadLine(line)
	b.OnBatch("Mail", esm.BatchReport{MessageIDs: []string{"m1"}, Bodies: []string{body}, Verdict: esm.AllSucceeded, Deleted: []string{"m1"}})
	j, ok := b.Job("j1")
	require.True(t, ok)
	require.True(t, j.Cancelled)
	require.Equal(t, "j1 (mail.send, Mail): cancelled before it ran", j.String())
	for _, end := range []tally.End{{}, {Succeeded: map[string]bool{}}} {
		got := b.Settle(end)
		require.Equal(t, 1, got.Cancelled)
		require.Zero(t, got.Succeeded)
		require.Empty(t, got.Lost)
	}
}
