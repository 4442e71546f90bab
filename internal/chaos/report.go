package chaos

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/tally"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// State is what a run left behind, read from the emulator after the stack stopped.
type State struct {
	// Effects is the effects table (instrument.ReadEffects).
	Effects map[string]instrument.EffectCount
	// Dead counts the messages of each job id found in the dead-letter queues.
	Dead map[string]int
	// Applied maps each ledger account to the posting ids the ledger applied, in the order it
	// applied them (samplejobs.LedgerAppliedAttr).
	Applied map[string][]string
	// Runs counts the real runs of each job id: the runtime's started events in the functions'
	// output (it called the job's handler, charging an attempt).
	Runs map[string]int
	// Last is what the run last knew of each job, by id (package tally: the mappings' reports,
	// the runtime's outcomes, the real runs); a job missing from it was never seen by a worker.
	Last map[string]tally.Job
	// Left is, per queue name (samplejobs.Queues), the messages still on the queue at the end:
	// waiting, delayed or in flight.
	Left map[string]int
	// UnknownDead is, per queue name, the dead-letter messages whose body names no job.
	UnknownDead map[string]int
	// Redrive is what the redrive of the dead-letter queues after the drain found (Config.Redrive);
	// nil when none ran.
	Redrive *RedriveState
}

// RedriveState is what a run knew when it redrove its dead-letter queues.
type RedriveState struct {
	// Before holds the jobs listed in the dead-letter queues when the redrive began, and
	// RunsBefore their real runs then (State.Runs).
	Before     map[string]bool
	RunsBefore map[string]int
	// Unlisted counts the dead-letter messages the listing could not show (a FIFO queue shows
	// the head of each message group); Moved the messages the redrive moved to their queues.
	Unlisted int
	Moved    int64
}

// Report is the outcome of a run.
type Report struct {
	// The CHAOS line's figures. Stranded jobs are still on their queue at the end (their state
	// never ended); Redriven jobs were in a dead-letter queue when the redrive began, and
	// RedriveLost of them neither ran again nor are back in a dead-letter queue.
	Jobs, Lost, Stranded, Redriven, RedriveLost, DuplicateEffects, Dead, ExpectedDead, OrderViolations, LongJobRuns int
	// NeverRanDead counts the dead jobs without one real run (State.Runs).
	NeverRanDead int
	// DuplicateDeliveries counts the envelopes sent a second time with the same id.
	DuplicateDeliveries int
	// DeadlineBatches counts the batches that reached their soft deadline with records not
	// started (the runtime's not-run events at a deadline, matched to the batches that listed them).
	DeadlineBatches int
	Seconds         int
	// Fan-out batches opened (Config.Batches), those whose callback's effect committed (the
	// effects table), the commits beyond one per batch, and the batches whose callback's effect
	// never committed.
	Batches, Callbacks, DuplicateCallbacks, MissingCallbacks int

	// The lost, stranded and redrive-lost jobs named, each with its kind, queue and last known
	// state (tally.Lines: at most tally.DefaultNamed, then "and N more").
	LostJobs, StrandedJobs, RedriveLostJobs []string
	// Examples (a few ids each) of what went wrong, for the log.
	DuplicateIDs, UnexpectedDeadIDs, OrderViolationGroups, NeverRanDeadIDs []string
	// DeadMessages counts dead-letter messages (a job dead-lettered twice counts twice).
	DeadMessages int

	// What the faults did, as measured.
	Faults FaultCounts
}

// FaultCounts measures the faults a run injected.
type FaultCounts struct {
	Transient, Poison int // planned
	// Overrun jobs (planned) return past their deadline on their first attempt; Duplicated jobs
	// (planned) are sent twice.
	Overrun, Duplicated int
	// NotStarted counts the records the runtime did not start because their batch had reached
	// its deadline.
	NotStarted int64
	// TransientFailures counts the injected retryable failures the functions reported.
	TransientFailures int64
	// Invocations of the functions; Kills the processes killed with SIGKILL during an invocation
	// (of the email and ledger functions); Crashes the invocations that ended with their process
	// gone.
	Invocations, Kills, Crashes int64
	// TranscodeStarts counts the short transcodes' starts in the transcode container;
	// ContainerKills the times its process was killed (SIGKILL) a few milliseconds into one.
	TranscodeStarts, ContainerKills int64
	// Calls reached the fault proxy; Throttled of them were answered with a throttling error;
	// Slowed of them were held back before they were forwarded (latency injection).
	Calls, Throttled, Slowed int64
	// APIs is the proxy's count per API.
	APIs faultproxy.Stats
}

// Line is the CHAOS line.
func (r *Report) Line() string {
	return fmt.Sprintf("CHAOS jobs=%d lost=%d stranded=%d redriven=%d redrive_lost=%d duplicate_effects=%d dead=%d expected_dead=%d order_violations=%d long_job_runs=%d never_ran_dead=%d duplicate_deliveries=%d deadline_batches=%d seconds=%d batches=%d callbacks=%d duplicate_callbacks=%d missing_callbacks=%d",
		r.Jobs, r.Lost, r.Stranded, r.Redriven, r.RedriveLost, r.DuplicateEffects, r.Dead, r.ExpectedDead, r.OrderViolations, r.LongJobRuns,
		r.NeverRanDead, r.DuplicateDeliveries, r.DeadlineBatches, r.Seconds, r.Batches, r.Callbacks, r.DuplicateCallbacks, r.MissingCallbacks)
}

// FaultLine describes the faults injected, in one line.
func (r *Report) FaultLine() string {
	f := r.Faults
	pct := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	return fmt.Sprintf("faults: transient_jobs=%d transient_failures=%d poison_jobs=%d overrun_jobs=%d not_started=%d duplicated_jobs=%d invocations=%d kills=%d (%.1f%%) crashes=%d container_kills=%d (of %d transcode starts) aws_calls=%d throttled=%d (%.1f%%) slowed=%d (%.1f%%) dead_messages=%d",
		f.Transient, f.TransientFailures, f.Poison, f.Overrun, f.NotStarted, f.Duplicated, f.Invocations, f.Kills, pct(f.Kills, f.Invocations), f.Crashes,
		f.ContainerKills, f.TranscodeStarts,
		f.Calls, f.Throttled, pct(f.Throttled, f.Calls), f.Slowed, pct(f.Slowed, f.Calls), r.DeadMessages)
}

// APILines describes the AWS calls per API, one line each: calls, throttled, entries or messages.
func (r *Report) APILines() []string {
	var lines []string
	for _, name := range r.Faults.APIs.Names() {
		a := r.Faults.APIs.APIs[name]
		lines = append(lines, fmt.Sprintf("api %-34s calls=%-6d throttled=%-5d errors=%-5d entries=%-6d messages=%-6d empty_receives=%d",
			name, a.Requests, a.Throttled, a.Errors, a.Entries, a.Messages, a.EmptyReceives))
	}
	return lines
}

// Check returns nil when the invariants hold: nothing lost, nothing stranded, nothing the redrive
// should have brought back missing, no effect applied twice, exactly the expected jobs dead and
// each of them run at least once, no order violation, the long job's body started once; and the
// planned faults took place: some envelopes delivered twice when jobs were planned duplicated,
// some batches at their deadline when jobs were planned to overrun. The lost, stranded and
// redrive-lost jobs are named.
func (r *Report) Check() error {
	var errs []error
	named := func(jobs []string) string { return "\n  " + strings.Join(jobs, "\n  ") }
	if r.Lost != 0 {
		errs = append(errs, fmt.Errorf("%d job(s) lost:%s", r.Lost, named(r.LostJobs)))
	}
	if r.Stranded != 0 {
		errs = append(errs, fmt.Errorf("%d job(s) stranded, their state never ended:%s", r.Stranded, named(r.StrandedJobs)))
	}
	if r.RedriveLost != 0 {
		errs = append(errs, fmt.Errorf("%d job(s) the redrive should have brought back neither ran nor are back in a dead-letter queue:%s",
			r.RedriveLost, named(r.RedriveLostJobs)))
	}
	if r.DuplicateEffects != 0 {
		errs = append(errs, fmt.Errorf("%d duplicate effect(s) (e.g. %s)", r.DuplicateEffects, strings.Join(r.DuplicateIDs, ", ")))
	}
	if r.Dead != r.ExpectedDead {
		errs = append(errs, fmt.Errorf("%d job(s) dead, %d expected (unexpected: %s)", r.Dead, r.ExpectedDead, strings.Join(r.UnexpectedDeadIDs, ", ")))
	}
	if r.OrderViolations != 0 {
		errs = append(errs, fmt.Errorf("%d order violation(s) (groups %s)", r.OrderViolations, strings.Join(r.OrderViolationGroups, ", ")))
	}
	if r.LongJobRuns != 1 {
		errs = append(errs, fmt.Errorf("the long job's body started %d time(s), want 1", r.LongJobRuns))
	}
	if r.NeverRanDead != 0 {
		errs = append(errs, fmt.Errorf("%d job(s) dead-lettered without one real run (e.g. %s)", r.NeverRanDead, strings.Join(r.NeverRanDeadIDs, ", ")))
	}
	if r.Faults.Duplicated > 0 && r.DuplicateDeliveries == 0 {
		errs = append(errs, fmt.Errorf("%d job(s) planned duplicated, no duplicate delivered", r.Faults.Duplicated))
	}
	if r.DuplicateCallbacks != 0 || r.MissingCallbacks != 0 {
		errs = append(errs, fmt.Errorf("batch callbacks: %d duplicate, %d missing of %d batches", r.DuplicateCallbacks, r.MissingCallbacks, r.Batches))
	}
	if r.Faults.Overrun > 0 && r.DeadlineBatches == 0 {
		errs = append(errs, fmt.Errorf("%d job(s) planned to overrun, no batch reached its deadline", r.Faults.Overrun))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("chaos: invariants broken: %w", errors.Join(errs...))
}

// examples is how many ids a report lists per problem.
const examples = 5

// Evaluate computes the report's figures from the plan and the state the run left. maxAttempts
// maps job kinds to their workers' max attempts (see Plan.ExpectedDead).
//
//   - lost: a planned job whose effect was never applied, that is in no dead-letter queue (before
//     or after the redrive) and no longer on its queue (package tally sorts them);
//   - stranded: a planned job neither applied nor dead, still on its queue at the end;
//   - redriven: the jobs listed in the dead-letter queues when the redrive began; redrive_lost:
//     those that since neither ran nor are back in a dead-letter queue (nor stranded);
//   - duplicate_effects: the sum over jobs of (applications - 1) where a job applied more than once;
//   - dead: planned jobs with a message in a dead-letter queue, before or after the redrive;
//   - order_violations: per ledger account, each posting applied after one with a greater or
//     equal place in its group (or not planned for it);
//   - long_job_runs: the times the long job's body started;
//   - never_ran_dead: dead jobs without a real run in st.Runs.
//
// DuplicateDeliveries and DeadlineBatches are the run's to fill in: they are not in the state.
func Evaluate(p *Plan, st State, maxAttempts map[string]int) Report {
	r := Report{Jobs: p.Len(), ExpectedDead: p.ExpectedDead(maxAttempts)}
	r.Faults.Poison, r.Faults.Transient = p.Counts()
	r.Faults.Overrun, r.Faults.Duplicated = p.ExtraCounts()
	var dup, unexpected, neverRan []string
	for _, j := range p.All() {
		applied := st.Effects[j.ID].Applied
		dead := st.inDLQ(j.ID)
		if dead && st.Runs[j.ID] == 0 {
			r.NeverRanDead++
			neverRan = append(neverRan, j.ID)
		}
		if dead {
			r.Dead++
			if !j.Poison && j.FailAttempts < maxOr(maxAttempts, j.Args.Kind()) {
				unexpected = append(unexpected, j.ID)
			}
		}
		if applied > 1 {
			r.DuplicateEffects += applied - 1
			dup = append(dup, j.ID)
		}
	}
	for _, n := range st.Dead {
		r.DeadMessages += n
	}
	r.LongJobRuns = st.Effects[p.Long.ID].Started

	seqOf := map[string]map[string]int{} // account → posting id → seq
	for _, j := range p.Ledger {
		if seqOf[j.Group] == nil {
			seqOf[j.Group] = map[string]int{}
		}
		seqOf[j.Group][samplejobsPosting(j)] = j.Seq
	}
	var badGroups []string
	for account, postings := range st.Applied {
		seqs, planned := seqOf[account]
		if !planned {
			continue
		}
		last, bad := 0, 0
		for _, id := range postings {
			seq, ok := seqs[id]
			if !ok || seq <= last {
				bad++
			}
			if ok && seq > last {
				last = seq
			}
		}
		if bad > 0 {
			r.OrderViolations += bad
			seqList := make([]string, len(postings))
			for i, id := range postings {
				if seq, ok := seqs[id]; ok {
					seqList[i] = fmt.Sprint(seq)
				} else {
					seqList[i] = id
				}
			}
			badGroups = append(badGroups, account+" applied ["+strings.Join(seqList, " ")+"]")
		}
	}
	r.settle(p, st)
	r.DuplicateIDs, r.UnexpectedDeadIDs, r.OrderViolationGroups = first(dup), first(unexpected), first(badGroups)
	r.NeverRanDeadIDs = first(neverRan)
	return r
}

func samplejobsPosting(j PlannedJob) string {
	return j.Args.(samplejobs.PostLedger).PostingID
}

func maxOr(m map[string]int, kind string) int {
	if v := m[kind]; v > 0 {
		return v
	}
	return contract.DefaultMaxAttempts
}

func first(ids []string) []string {
	sort.Strings(ids)
	if len(ids) > examples {
		return append(ids[:examples:examples], fmt.Sprintf("... %d more", len(ids)-examples))
	}
	return ids
}
