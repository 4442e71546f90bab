package devapp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/devapp"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The dev workload has the jobs and faults it promises, in a reproducible order, with each
// account's postings numbered in order and at most one dead posting per account.
func TestDevWorkload(t *testing.T) {
	t.Parallel()
	w := devapp.DevWorkload()
	js, err := w.Jobs()
	require.NoError(t, err)
	require.Len(t, js, w.Size())
	again, err := w.Jobs()
	require.NoError(t, err)
	require.Equal(t, js, again, "the same workload gives the same jobs")

	type tally struct{ jobs, retries, exhausted, poison int }
	per := map[string]*tally{}
	deadPerAccount := map[string]int{}
	faultsPerAccount := map[string]int{}
	lastSeq := map[string]int64{}
	long := 0
	for _, j := range js {
		if j.Priority == "" {
			require.Equal(t, samplejobs.Queues[j.Args.Kind()], j.Queue)
		} else {
			require.Equal(t, contract.LaneQueueName(samplejobs.QueueNotify, j.Priority), j.Queue, "a job sent at a priority is its lane's")
		}
		n := per[j.Queue]
		if n == nil {
			n = &tally{}
			per[j.Queue] = n
		}
		n.jobs++
		f := j.Faults
		switch {
		case f.Poison:
			n.poison++
		case f.FailAttempts == devapp.UnlimitedFailures:
			n.exhausted++
		case f.FailAttempts > 0:
			want := w.RetryAttempts
			if j.Queue == samplejobs.QueueTranscode {
				want = 1
			}
			require.Equal(t, want, f.FailAttempts)
			n.retries++
		}
		switch a := j.Args.(type) {
		case samplejobs.PostLedger:
			require.Equal(t, a.Account, j.GroupID, "a posting's group is its account")
			require.Equal(t, lastSeq[a.Account]+1, a.Seq, "%s numbered in order", a.PostingID)
			lastSeq[a.Account] = a.Seq
			if out, _ := devapp.Expect(f, contract.DefaultMaxAttempts); out == devapp.DeadLettered {
				deadPerAccount[a.Account]++
			}
			if f != (instrument.Faults{}) {
				faultsPerAccount[a.Account]++
			}
		case samplejobs.TranscodeVideo:
			if a.Seconds == w.LongTranscodeSeconds {
				long++
				require.Equal(t, instrument.Faults{}, f, "a long transcode has no faults")
			}
			require.LessOrEqual(t, f.FailAttempts, 1, "a transcode fails one attempt at most")
		default:
			require.Empty(t, j.GroupID)
		}
	}
	require.Equal(t, tally{w.Emails + w.LargeEmails, w.EmailRetries, w.EmailExhausted, w.EmailPoison}, *per[samplejobs.QueueEmail])
	require.Equal(t, tally{w.Postings, w.PostingRetries, w.PostingExhausted, w.PostingPoison}, *per[samplejobs.QueueLedger])
	require.Equal(t, tally{w.Transcodes + w.LongTranscodes, w.TranscodeRetries, 0, w.TranscodePoison}, *per[samplejobs.QueueTranscode])
	require.Equal(t, w.LongTranscodes, long)
	lane := func(l string) int { return per[contract.LaneQueueName(samplejobs.QueueNotify, l)].jobs }
	require.Equal(t, w.CriticalNotifications, lane(samplejobs.LaneCritical))
	require.Equal(t, w.BulkNotifications, lane(samplejobs.LaneBulk))
	require.Equal(t, w.Notifications-w.CriticalNotifications-w.BulkNotifications, lane(samplejobs.LaneDefault))
	require.Positive(t, w.CriticalNotifications*w.BulkNotifications, "the dev workload sends at critical and at bulk")
	require.Len(t, lastSeq, w.Accounts)
	for acct, n := range deadPerAccount {
		require.Equal(t, 1, n, acct)
	}
	faulty := w.PostingRetries + w.PostingExhausted + w.PostingPoison
	for acct, n := range faultsPerAccount {
		require.LessOrEqual(t, n, (faulty+w.Accounts-1)/w.Accounts, "%s: faults spread evenly", acct)
	}
}

func TestWorkloadInvalid(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]devapp.Workload{
		"negative":              {Emails: -1},
		"more faulty emails":    {Emails: 2, EmailRetries: 2, EmailPoison: 1},
		"postings, no accounts": {Postings: 3},
		"two dead in a group":   {Postings: 10, Accounts: 1, PostingPoison: 1, PostingExhausted: 1},
		"more faulty videos":    {Transcodes: 1, TranscodePoison: 2},
		"faulty long videos":    {Transcodes: 1, LongTranscodes: 1, TranscodePoison: 2},
	} {
		_, err := w.Jobs()
		require.Error(t, err, name)
	}
	js, err := devapp.Workload{}.Jobs()
	require.NoError(t, err)
	require.Empty(t, js)
	// More accounts than postings: the dead ones still land on accounts that have postings.
	js, err = devapp.Workload{Postings: 2, Accounts: 5, PostingPoison: 2}.Jobs()
	require.NoError(t, err)
	require.Len(t, js, 2)
	for _, j := range js {
		require.True(t, j.Faults.Poison)
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f       instrument.Faults
		max     int
		outcome devapp.Outcome
		reason  string
	}{
		{instrument.Faults{}, 5, devapp.Succeeds, ""},
		{instrument.Faults{FailAttempts: 4}, 5, devapp.Succeeds, ""},
		{instrument.Faults{FailAttempts: 5}, 5, devapp.DeadLettered, contract.ReasonAttemptsUsed},
		{instrument.Faults{FailAttempts: devapp.UnlimitedFailures}, 3, devapp.DeadLettered, contract.ReasonAttemptsUsed},
		{instrument.Faults{Poison: true, FailAttempts: 1}, 5, devapp.DeadLettered, contract.ReasonCancelled},
	} {
		outcome, reason := devapp.Expect(c.f, c.max)
		require.Equal(t, c.outcome, outcome, "%+v", c.f)
		require.Equal(t, c.reason, reason, "%+v", c.f)
	}
	require.Equal(t, "succeeds", devapp.Succeeds.String())
	require.Equal(t, "dead-lettered", devapp.DeadLettered.String())
}
