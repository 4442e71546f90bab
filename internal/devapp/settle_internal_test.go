package devapp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
)

// A full census sorts the tracked jobs by job id: a poison job redriven and dead-lettered again,
// found in the dead-letter queue, is dead; a job whose message was deleted after its second
// attempt without a COMPLETED record is lost, and named with its last known state; a job never
// received while a message waits on its queue is left, not lost.
func TestFullCensusNamesTheLost(t *testing.T) {
	t.Parallel()
	url, dlq := "https://sqs/Email", "https://sqs/Email-dlq"
	d := &deploy.Deployment{Stacks: []deploy.Stack{{Outputs: map[string]string{
		contract.OutputQueuePrefix + samplejobs.QueueEmail: url, contract.OutputDLQPrefix + samplejobs.QueueEmail: dlq}}}}
	tr, err := newTracker(nil, nil, d)
	require.NoError(t, err)
	for _, id := range []string{"poison", "gone", "waiting"} {
		tr.Add(jobs.EnqueueResult{ID: id, Kind: samplejobs.KindSendEmail, QueueURL: url}, samplejobs.SendEmail{}, "", "")
	}
	env := func(id string) string { return `{"v":1,"id":"` + id + `","kind":"email.send","args":{}}` }
	tr.OnBatch("EmailFn", esm.BatchReport{QueueURL: url, MessageIDs: []string{"m1", "m2"}, Bodies: []string{env("poison"), env("gone")},
		Verdict: esm.Partial, Deleted: []string{"m1"}, Failed: []string{"m2"}})
	out := tr.Output(nil)
	_, err = out.Write([]byte(`[EmailFn] {"event":"dead","job_id":"poison","message_id":"m1","attempt":1,"reason":"cancelled"}
[EmailFn] {"event":"retried","job_id":"gone","message_id":"m2","attempt":2,"error":"smtp: 421"}
[EmailFn] {"event":"dead","job_id":"poison","message_id":"m3","attempt":1,"reason":"cancelled"}
`))
	require.NoError(t, err)
	tr.OnBatch("EmailFn", esm.BatchReport{QueueURL: url, MessageIDs: []string{"m2"}, Bodies: []string{env("gone")}, Verdict: esm.AllSucceeded, Deleted: []string{"m2"}})
	tr.OnBatch("EmailFn", esm.BatchReport{QueueURL: url, MessageIDs: []string{"m3"}, Bodies: []string{env("poison")}, Verdict: esm.AllSucceeded, Deleted: []string{"m3"}})

	c := &Census{Full: true, Succeeded: map[string]bool{}}
	per := map[*Queue]*Counts{tr.queues[0]: {Pending: 1}}
	tr.settle(c, tr.Jobs(), per, []*inspect.DeadList{{Approximate: 1, Scanned: 1}}, map[string]bool{"poison": true})
	require.Equal(t, 1, c.Lost)
	require.Equal(t, []string{"gone (email.send, Email): deleted after attempt 2 without a result"}, c.LostLines())
	require.Equal(t, []string{"waiting (email.send, Email): never seen by a worker"}, c.LeftLines())
	require.EqualError(t, c.LostError(), "1 job(s) lost: gone (email.send, Email): deleted after attempt 2 without a result")
	require.Equal(t, 1, tr.Effects(tr.Jobs()[1]).FailedAttempts, "one failed attempt reported")
	require.Equal(t, "cancelled", tr.Effects(tr.Jobs()[0]).DeadReason)
}
