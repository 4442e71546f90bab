package devapp

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Workload describes a demo workload over the sample stack's three functions. Faulty jobs are a
// subset of each kind's jobs; they carry fault instructions (instrument.Faults, which the
// instrumented functions inject), so their outcome is known in advance (see Expect). The zero Workload has no jobs.
type Workload struct {
	// Emails is the number of SendEmail jobs (Email queue).
	Emails int
	// EmailRetries fail their first RetryAttempts attempts, then succeed.
	EmailRetries int
	// EmailExhausted fail every attempt: dead-lettered with reason attempts_exhausted.
	EmailExhausted int
	// EmailPoison are poison: dead-lettered at once with reason cancelled.
	EmailPoison int
	// LargeEmails are SendEmail jobs (no faults) whose body is LargeEmailBytes long: past SQS's
	// 1 MiB, so the Client stores each in S3 and the message carries a pointer (the claim check).
	LargeEmails     int
	LargeEmailBytes int

	// Accounts is the number of ledger accounts (FIFO message groups); Postings are spread over
	// them round-robin, each account's numbered 1, 2, 3, ... (PostLedger.Seq).
	Accounts int
	// Postings is the number of PostLedger jobs (Ledger queue).
	Postings         int
	PostingRetries   int
	PostingExhausted int
	PostingPoison    int

	// Transcodes is the number of TranscodeVideo jobs (Transcode queue), each TranscodeSeconds
	// long, plus LongTranscodes of LongTranscodeSeconds. Faulty transcodes are short ones.
	Transcodes           int
	TranscodeSeconds     int
	LongTranscodes       int
	LongTranscodeSeconds int
	// TranscodeRetries fail their first attempt only (the sample's transcode function waits up
	// to 30 s before a retry, 60 s before the next).
	TranscodeRetries int
	TranscodePoison  int

	// Notifications is the number of SendNotification jobs (Notify queue, with priority lanes):
	// CriticalNotifications of them are sent at Priority critical, BulkNotifications at bulk,
	// the rest to the default lane.
	Notifications         int
	CriticalNotifications int
	BulkNotifications     int

	// RetryAttempts is how many attempts a retried email or posting fails; 0 means 1.
	RetryAttempts int
	// Seed makes amounts and the placement of faulty jobs reproducible.
	Seed uint64
}

// DevWorkload is what `jobkit dev` enqueues: 100 emails and a 3 MiB one (via S3), 60 postings
// over 6 accounts, 7 transcodes, one of them 20 s long, with some retried, exhausted and poison
// jobs of each kind, and 30 notifications over the Notify queue's lanes (5 critical, 20 bulk, 5
// default).
func DevWorkload() Workload {
	return Workload{
		Emails: 100, EmailRetries: 10, EmailExhausted: 2, EmailPoison: 3, LargeEmails: 1, LargeEmailBytes: 3 << 20,
		Accounts: 6, Postings: 60, PostingRetries: 6, PostingExhausted: 1, PostingPoison: 2,
		Transcodes: 6, TranscodeSeconds: 3, LongTranscodes: 1, LongTranscodeSeconds: 20,
		TranscodeRetries: 1, TranscodePoison: 1,
		Notifications: 30, CriticalNotifications: 5, BulkNotifications: 20,
		RetryAttempts: 2, Seed: 7,
	}
}

// UnlimitedFailures is FailAttempts of an exhausted job: more attempts than any queue allows.
const UnlimitedFailures = 1000

// Job is one job of a workload.
type Job struct {
	// Queue is the samplejobs queue name (samplejobs.QueueEmail, ...).
	Queue string
	// Args are the job's arguments: samplejobs.SendEmail, PostLedger or TranscodeVideo.
	Args jobs.JobArgs
	// GroupID is the FIFO message group (the account of a posting).
	GroupID string
	// Faults are the failures the job asks for (none for most jobs).
	Faults instrument.Faults
	// Priority is the lane of a queue with lanes (EnqueueOpts.Priority); "" is the default lane.
	Priority string
}

// Enqueued returns the args to enqueue for j: Args with Faults added (instrument.WithFaults).
func (j Job) Enqueued() jobs.JobArgs { return instrument.WithFaults(j.Args, j.Faults) }

// Size returns the number of jobs the workload enqueues.
func (w Workload) Size() int {
	return w.Emails + w.LargeEmails + w.Postings + w.Transcodes + w.LongTranscodes + w.Notifications
}

// Jobs returns the workload's jobs: emails, then postings (in each account's order), then
// transcodes, then notifications. The same Workload always returns the same jobs.
func (w Workload) Jobs() ([]Job, error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	retry := w.RetryAttempts
	if retry <= 0 {
		retry = 1
	}
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x9e3779b97f4a7c15))
	out := w.emails(rng, retry)
	out = append(out, w.postings(rng, retry)...)
	out = append(out, w.transcodes(rng)...)
	return append(out, w.notifications()...), nil
}

// notifications returns the SendNotification jobs: the bulk ones first, a digest for each user,
// so the critical sign-in codes after them find the bulk lane full, and the default lane's last.
func (w Workload) notifications() []Job {
	out := make([]Job, 0, w.Notifications)
	for i := range w.Notifications {
		lane, text := samplejobs.LaneDefault, "Your order has shipped"
		switch {
		case i < w.BulkNotifications:
			lane, text = samplejobs.LaneBulk, "Your weekly digest"
		case i < w.BulkNotifications+w.CriticalNotifications:
			lane, text = samplejobs.LaneCritical, "Your sign-in code"
		}
		j := Job{Queue: contract.LaneQueueName(samplejobs.QueueNotify, lane),
			Args: samplejobs.SendNotification{User: fmt.Sprintf("user-%03d", i+1), Text: text}}
		if lane != samplejobs.LaneDefault {
			j.Priority = lane
		}
		out = append(out, j)
	}
	return out
}

// spreadFaults spreads faulty jobs over n: a permutation of positions, taken in turn, gets
// retries jobs failing retry attempts, then exhausted jobs failing every attempt, then poison.
func spreadFaults(rng *rand.Rand, n, retries, exhausted, poison, retry int) []instrument.Faults {
	out := make([]instrument.Faults, n)
	pos := rng.Perm(n)
	for _, p := range pos[:retries] {
		out[p] = instrument.Faults{FailAttempts: retry}
	}
	for _, p := range pos[retries : retries+exhausted] {
		out[p] = instrument.Faults{FailAttempts: UnlimitedFailures}
	}
	for _, p := range pos[retries+exhausted : retries+exhausted+poison] {
		out[p] = instrument.Faults{Poison: true}
	}
	return out
}

// emails returns the SendEmail jobs.
func (w Workload) emails(rng *rand.Rand, retry int) []Job {
	ef := spreadFaults(rng, w.Emails, w.EmailRetries, w.EmailExhausted, w.EmailPoison, retry)
	out := make([]Job, 0, w.Emails)
	for i := range w.Emails {
		out = append(out, Job{Queue: samplejobs.QueueEmail, Faults: ef[i], Args: samplejobs.SendEmail{
			To: fmt.Sprintf("user-%03d@example.com", i+1), Subject: fmt.Sprintf("Welcome #%d", i+1),
		}})
	}
	for i := range w.LargeEmails {
		out = append(out, Job{Queue: samplejobs.QueueEmail, Args: samplejobs.SendEmail{
			To:      fmt.Sprintf("newsletter-%d@example.com", i+1),
			Subject: fmt.Sprintf("Newsletter #%d (%.1f MiB)", i+1, float64(w.LargeEmailBytes)/(1<<20)),
			Body:    strings.Repeat("<p>jobkit</p>", w.LargeEmailBytes/13+1)[:w.LargeEmailBytes],
		}})
	}
	return out
}

// IsLarge reports whether j is one of the workload's large jobs (LargeEmails).
func (j Job) IsLarge() bool { return j.BodyBytes() > jobs.MaxMessageSize }

// BodyBytes returns the length of an email job's body (0 for other jobs).
func (j Job) BodyBytes() int {
	e, _ := j.Args.(samplejobs.SendEmail)
	return len(e.Body)
}

// postings returns the PostLedger jobs, spread over the accounts round-robin and numbered in
// each account's order.
func (w Workload) postings(rng *rand.Rand, retry int) []Job {
	pf := w.postingFaults(rng, retry)
	out := make([]Job, 0, w.Postings)
	seq := make([]int64, w.Accounts)
	for i := range w.Postings {
		a := i % w.Accounts
		seq[a]++
		p := samplejobs.PostLedger{
			Account:     fmt.Sprintf("acct-%02d", a+1),
			PostingID:   fmt.Sprintf("p-%02d-%03d", a+1, seq[a]),
			AmountCents: int64(rng.IntN(20000)) - 5000,
			Seq:         seq[a],
		}
		out = append(out, Job{Queue: samplejobs.QueueLedger, Args: p, GroupID: p.GroupID(), Faults: pf[i]})
	}
	return out
}

// postingFaults places the faulty postings: spread evenly over the accounts, dead ones first and
// at most one per account. An account's postings wait behind its failing one (FIFO), and every
// delivery counts as an attempt, so piling faults on one account would use up the attempts of
// the postings behind them; one dead posting per account also keeps each visible to a
// dead-letter listing (a FIFO queue shows only the head of each group).
func (w Workload) postingFaults(rng *rand.Rand, retry int) []instrument.Faults {
	pf := make([]instrument.Faults, w.Postings)
	if w.Postings == 0 {
		return pf
	}
	n := min(w.Accounts, w.Postings) // accounts that have postings
	free := make([][]int, n)         // each account's positions not yet faulty, shuffled
	for i := range w.Postings {
		free[i%w.Accounts] = append(free[i%w.Accounts], i)
	}
	for _, f := range free {
		rng.Shuffle(len(f), func(i, j int) { f[i], f[j] = f[j], f[i] })
	}
	var faulty []instrument.Faults
	for range w.PostingExhausted {
		faulty = append(faulty, instrument.Faults{FailAttempts: UnlimitedFailures})
	}
	for range w.PostingPoison {
		faulty = append(faulty, instrument.Faults{Poison: true})
	}
	for range w.PostingRetries {
		faulty = append(faulty, instrument.Faults{FailAttempts: retry})
	}
	order := rng.Perm(n)
	k := 0
	for _, f := range faulty {
		for len(free[order[k%n]]) == 0 {
			k++
		}
		a := order[k%n]
		pf[free[a][0]], free[a] = f, free[a][1:]
		k++
	}
	return pf
}

// transcodes returns the TranscodeVideo jobs: the short ones, then the long ones. Faulty
// transcodes are short ones: a long one failing first would add its length to the wait.
func (w Workload) transcodes(rng *rand.Rand) []Job {
	n := w.Transcodes + w.LongTranscodes
	tf := append(spreadFaults(rng, w.Transcodes, w.TranscodeRetries, 0, w.TranscodePoison, 1), make([]instrument.Faults, w.LongTranscodes)...)
	out := make([]Job, 0, n)
	for i := range n {
		secs := w.TranscodeSeconds
		if i >= w.Transcodes {
			secs = w.LongTranscodeSeconds
		}
		out = append(out, Job{Queue: samplejobs.QueueTranscode, Faults: tf[i], Args: samplejobs.TranscodeVideo{
			VideoID: fmt.Sprintf("video-%03d", i+1), Seconds: secs,
		}})
	}
	return out
}

func (w Workload) validate() error {
	bad := func(what string, faulty, total int) error {
		return fmt.Errorf("demo: workload: %d faulty %s out of %d", faulty, what, total)
	}
	switch {
	case w.LargeEmails < 0 || (w.LargeEmails > 0 && w.LargeEmailBytes <= jobs.MaxMessageSize):
		return fmt.Errorf("demo: workload: %d large emails of %d bytes: want more than %d bytes each", w.LargeEmails, w.LargeEmailBytes, jobs.MaxMessageSize)
	case w.Notifications < 0 || w.CriticalNotifications < 0 || w.BulkNotifications < 0:
		return fmt.Errorf("demo: workload: negative count in %+v", w)
	case w.CriticalNotifications+w.BulkNotifications > w.Notifications:
		return fmt.Errorf("demo: workload: %d critical and %d bulk notifications out of %d", w.CriticalNotifications, w.BulkNotifications, w.Notifications)
	case w.Emails < 0 || w.Postings < 0 || w.Transcodes < 0 || w.LongTranscodes < 0 || w.Accounts < 0 ||
		w.EmailRetries < 0 || w.EmailExhausted < 0 || w.EmailPoison < 0 ||
		w.PostingRetries < 0 || w.PostingExhausted < 0 || w.PostingPoison < 0 ||
		w.TranscodeRetries < 0 || w.TranscodePoison < 0 || w.TranscodeSeconds < 0 || w.LongTranscodeSeconds < 0:
		return fmt.Errorf("demo: workload: negative count in %+v", w)
	case w.EmailRetries+w.EmailExhausted+w.EmailPoison > w.Emails:
		return bad("emails", w.EmailRetries+w.EmailExhausted+w.EmailPoison, w.Emails)
	case w.PostingRetries+w.PostingExhausted+w.PostingPoison > w.Postings:
		return bad("postings", w.PostingRetries+w.PostingExhausted+w.PostingPoison, w.Postings)
	case w.Postings > 0 && w.Accounts == 0:
		return fmt.Errorf("demo: workload: %d postings need at least one account", w.Postings)
	case w.PostingExhausted+w.PostingPoison > min(w.Accounts, w.Postings):
		return fmt.Errorf("demo: workload: %d dead postings; at most one per account (%d accounts)",
			w.PostingExhausted+w.PostingPoison, w.Accounts)
	case w.TranscodeRetries+w.TranscodePoison > w.Transcodes:
		return bad("short transcodes", w.TranscodeRetries+w.TranscodePoison, w.Transcodes)
	}
	return nil
}

// Outcome is how a job ends.
type Outcome int

// Outcomes of a job.
const (
	Succeeds Outcome = iota + 1
	DeadLettered
)

func (o Outcome) String() string {
	switch o {
	case Succeeds:
		return "succeeds"
	case DeadLettered:
		return "dead-lettered"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Expect returns how a job with these faults ends on a queue allowing maxAttempts attempts, and
// the dead-letter reason (jobs.Reason*) when it is dead-lettered.
func Expect(f instrument.Faults, maxAttempts int) (Outcome, string) {
	switch {
	case f.Poison:
		return DeadLettered, contract.ReasonCancelled
	case f.FailAttempts >= maxAttempts:
		return DeadLettered, contract.ReasonAttemptsUsed
	}
	return Succeeds, ""
}
