package chaos

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// PlanConfig sizes a plan. The zero value of a field means its default.
type PlanConfig struct {
	// Jobs is the total number of jobs, the long job included; default 10,000.
	Jobs int
	// Groups and GroupJobs shape the FIFO part: Groups ledger accounts of GroupJobs postings
	// each, enqueued in order; defaults 100 and 20. The rest are email jobs and the long job.
	Groups, GroupJobs int
	// TransientRate is the share of jobs that fail their first attempts with a retryable error;
	// default 0.10. Each fails between 1 and MaxFailAttempts attempts.
	TransientRate float64
	// MaxFailAttempts is the most attempts a transient job fails; default 2.
	MaxFailAttempts int
	// PoisonRate is the share of poison jobs (cancelled, so dead-lettered); default 0.01.
	PoisonRate float64
	// LongJobSeconds is the long job's duration; default 60.
	LongJobSeconds int
	// Transcodes is the number of short transcodes (TranscodeSeconds each, taken from the email
	// share), enqueued once the long job is done: the transcode container's process is killed
	// during some of them (Config.ContainerKillRate). Default 0.
	Transcodes       int
	TranscodeSeconds int
	// OverrunRate is the share of jobs whose first attempt returns OverrunMS past its deadline
	// (instrument.Faults.OverrunMS): each is the first posting of a ledger group of its own
	// (drawn among the groups whose first posting has no other fault), and those groups are
	// enqueued one after the other, each in one burst (Plan.LedgerBursts), so that a batch holds
	// the overrunning posting and the postings behind it, which then meet the soft deadline.
	// Default 0.001, negative for none.
	OverrunRate float64
	// OverrunMS is how late an overrunning job returns; default 300.
	OverrunMS int
	// DuplicateRate is the share of jobs, drawn among the email jobs that are not poison, whose
	// envelope is sent twice with the same id, as SQS Standard may deliver a message twice;
	// default 0.02, negative for none.
	DuplicateRate float64
	// FailingHeads is the number of FIFO groups whose first two postings fail every attempt
	// (dead-lettered as attempts_exhausted), so that the group's other postings wait behind
	// failing heads, received again and again without running; default none.
	FailingHeads int
	// CrashLoops is the number of email jobs that kill the email function's process on every
	// delivery (instrument.Faults.Crash): each ends dead as no_outcome; default none.
	CrashLoops int
	// Seed makes the plan repeatable; default 1.
	Seed uint64
}

func (c PlanConfig) withDefaults() PlanConfig {
	c.Jobs = cmp.Or(c.Jobs, 10000)
	c.Groups = cmp.Or(c.Groups, 100)
	c.GroupJobs = cmp.Or(c.GroupJobs, 20)
	c.TransientRate = cmp.Or(c.TransientRate, 0.10)
	c.MaxFailAttempts = cmp.Or(c.MaxFailAttempts, 2)
	c.PoisonRate = cmp.Or(c.PoisonRate, 0.01)
	c.LongJobSeconds = cmp.Or(c.LongJobSeconds, 60)
	c.Seed = cmp.Or(c.Seed, 1)
	c.TranscodeSeconds = cmp.Or(c.TranscodeSeconds, 2)
	c.OverrunRate = cmp.Or(c.OverrunRate, 0.001)
	c.OverrunMS = cmp.Or(c.OverrunMS, 300)
	c.DuplicateRate = cmp.Or(c.DuplicateRate, 0.02)
	return c
}

// PlannedJob is one job of a plan.
type PlannedJob struct {
	ID   string
	Args jobs.JobArgs
	// Group is the FIFO message group (ledger account) and Seq the job's place in it (1, 2, ...);
	// empty and 0 for Standard jobs.
	Group string
	Seq   int
	// Poison and FailAttempts repeat the job's faults.
	Poison       bool
	FailAttempts int
	// Long marks the long job.
	Long bool
	// OverrunMS repeats the job's overrun fault; Duplicate says its envelope is sent twice.
	OverrunMS int
	Duplicate bool
	// Crash says the job kills its process on every delivery (a crash loop).
	Crash bool
}

// Plan is the jobs of a run, in enqueue order per queue.
type Plan struct {
	Config PlanConfig
	Email  []PlannedJob
	Ledger []PlannedJob // group by group interleaved: every group's Seq 1, then every Seq 2, ...
	Long   PlannedJob
	// Transcode are the short transcodes (PlanConfig.Transcodes).
	Transcode []PlannedJob
	byID      map[string]*PlannedJob
}

// NewPlan builds the plan cfg describes. The transient and poison jobs are drawn at random
// (from cfg.Seed) among the email and ledger jobs, exactly round(rate × Jobs) of each.
func NewPlan(cfg PlanConfig) (*Plan, error) {
	cfg = cfg.withDefaults()
	fifo := cfg.Groups * cfg.GroupJobs
	emails := cfg.Jobs - fifo - 1 - cfg.Transcodes
	if cfg.Jobs < 2 || emails < 0 || cfg.Transcodes < 0 || cfg.Groups < 0 || cfg.GroupJobs < 0 {
		return nil, fmt.Errorf("chaos: %d jobs cannot hold %d×%d FIFO jobs and the long job", cfg.Jobs, cfg.Groups, cfg.GroupJobs)
	}
	transient := int(math.Round(cfg.TransientRate * float64(cfg.Jobs)))
	poison := int(math.Round(cfg.PoisonRate * float64(cfg.Jobs)))
	if cfg.TransientRate < 0 || cfg.PoisonRate < 0 || transient+poison > emails+fifo {
		return nil, fmt.Errorf("chaos: rates %v (transient) and %v (poison) do not fit %d jobs", cfg.TransientRate, cfg.PoisonRate, emails+fifo)
	}
	if cfg.MaxFailAttempts < 1 {
		return nil, fmt.Errorf("chaos: MaxFailAttempts %d is below 1", cfg.MaxFailAttempts)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6a6f626b6974))
	// Faults for the email and ledger jobs, by index: 0..emails-1 email, then ledger.
	type fault struct {
		poison bool
		fail   int
	}
	faults := make([]fault, emails+fifo)
	perm := rng.Perm(len(faults))
	for _, idx := range perm[:poison] {
		faults[idx].poison = true
	}
	for _, idx := range perm[poison : poison+transient] {
		faults[idx].fail = 1 + rng.IntN(cfg.MaxFailAttempts)
	}

	p := &Plan{Config: cfg, byID: map[string]*PlannedJob{}}
	for i := range emails {
		f := faults[i]
		id := fmt.Sprintf("chaos-email-%05d", i+1)
		args := samplejobs.SendEmail{
			To: fmt.Sprintf("user%05d@example.com", i+1), Subject: "chaos " + id,
		}
		p.Email = append(p.Email, PlannedJob{ID: id, Args: args, Poison: f.poison, FailAttempts: f.fail})
	}
	for seq := 1; seq <= cfg.GroupJobs; seq++ {
		for g := 1; g <= cfg.Groups; g++ {
			f := faults[emails+(g-1)*cfg.GroupJobs+seq-1]
			account := fmt.Sprintf("chaos-acct-%03d", g)
			posting := fmt.Sprintf("g%03d-s%02d", g, seq)
			args := samplejobs.PostLedger{
				Account: account, PostingID: posting, AmountCents: int64(seq),
			}
			p.Ledger = append(p.Ledger, PlannedJob{
				ID: "chaos-ledger-" + posting, Args: args, Group: account, Seq: seq, Poison: f.poison, FailAttempts: f.fail,
			})
		}
	}
	p.drawExtras(rng)
	if err := p.drawCrashes(rng); err != nil {
		return nil, err
	}
	p.Long = PlannedJob{ID: "chaos-long-1", Args: samplejobs.TranscodeVideo{VideoID: "chaos-long", Seconds: cfg.LongJobSeconds}, Long: true}
	for _, list := range [][]PlannedJob{p.Email, p.Ledger} {
		for i := range list {
			p.byID[list[i].ID] = &list[i]
		}
	}
	p.byID[p.Long.ID] = &p.Long
	for i := range cfg.Transcodes {
		id := fmt.Sprintf("%s%03d", TranscodeIDPrefix, i+1)
		p.Transcode = append(p.Transcode, PlannedJob{ID: id, Args: samplejobs.TranscodeVideo{VideoID: id, Seconds: cfg.TranscodeSeconds}})
	}
	for i := range p.Transcode {
		p.byID[p.Transcode[i].ID] = &p.Transcode[i]
	}
	return p, nil
}

// TranscodeIDPrefix begins the ids of the short transcodes.
const TranscodeIDPrefix = "chaos-transcode-"

// drawExtras picks the overrunning postings (the first of groups whose first posting has no
// other fault) and the duplicated emails (among those that are not poison), after the other
// faults, so that a seed draws the same transient and poison jobs as before they existed.
func (p *Plan) drawExtras(rng *rand.Rand) {
	pick := func(list []PlannedJob, n int, ok func(*PlannedJob) bool, mark func(*PlannedJob)) {
		var idx []int
		for i := range list {
			if ok(&list[i]) {
				idx = append(idx, i)
			}
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for _, i := range idx[:min(n, len(idx))] {
			mark(&list[i])
		}
	}
	count := func(rate float64) int { return max(int(math.Round(rate*float64(p.Config.Jobs))), 0) }
	pick(p.Ledger, count(p.Config.OverrunRate),
		func(j *PlannedJob) bool { return j.Seq == 1 && !j.Poison && j.FailAttempts == 0 },
		func(j *PlannedJob) { j.OverrunMS = p.Config.OverrunMS })
	pick(p.Email, count(p.Config.DuplicateRate),
		func(j *PlannedJob) bool { return !j.Poison },
		func(j *PlannedJob) { j.Duplicate = true })
}

// failingHeadsAttempts is the fail_attempts of a failing head: more than any queue's attempts.
const failingHeadsAttempts = 99

// drawCrashes picks the failing heads (the first two postings of groups without an overrun, their
// own faults replaced) and the crash loops (emails without other faults), after every other draw, so that a seed
// draws the same faults as before they existed.
func (p *Plan) drawCrashes(rng *rand.Rand) error {
	c := p.Config
	if c.FailingHeads > 0 {
		if c.GroupJobs < 2 {
			return fmt.Errorf("chaos: failing heads need groups of at least 2 jobs")
		}
		clean := map[string]bool{} // groups without an overrun: their postings are enqueued interleaved
		for i := range p.Ledger {
			j := &p.Ledger[i]
			if _, seen := clean[j.Group]; !seen {
				clean[j.Group] = true
			}
			if j.OverrunMS > 0 {
				clean[j.Group] = false
			}
		}
		var groups []string
		for g, ok := range clean {
			if ok {
				groups = append(groups, g)
			}
		}
		slices.Sort(groups)
		if len(groups) < c.FailingHeads {
			return fmt.Errorf("chaos: %d failing heads, but only %d groups without an overrun", c.FailingHeads, len(groups))
		}
		rng.Shuffle(len(groups), func(a, b int) { groups[a], groups[b] = groups[b], groups[a] })
		heads := map[string]bool{}
		for _, g := range groups[:c.FailingHeads] {
			heads[g] = true
		}
		for i := range p.Ledger {
			if j := &p.Ledger[i]; heads[j.Group] && j.Seq <= 2 {
				j.FailAttempts, j.Poison = failingHeadsAttempts, false
			}
		}
	}
	if c.CrashLoops > 0 {
		var idx []int
		for i, j := range p.Email {
			if !j.Poison && j.FailAttempts == 0 && !j.Duplicate {
				idx = append(idx, i)
			}
		}
		if len(idx) < c.CrashLoops {
			return fmt.Errorf("chaos: %d crash loops, but only %d emails without other faults", c.CrashLoops, len(idx))
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for _, i := range idx[:c.CrashLoops] {
			p.Email[i].Crash = true
		}
	}
	return nil
}

// LedgerBursts returns the ledger postings in enqueue order: the groups whose first posting
// overruns, each group's postings in one burst of its own, then the other groups interleaved as
// in Plan.Ledger.
func (p *Plan) LedgerBursts() (bursts [][]*PlannedJob, rest []*PlannedJob) {
	index := map[string]int{}
	for i := range p.Ledger {
		if j := &p.Ledger[i]; j.OverrunMS > 0 {
			index[j.Group] = len(bursts)
			bursts = append(bursts, nil)
		}
	}
	for i := range p.Ledger {
		j := &p.Ledger[i]
		if b, ok := index[j.Group]; ok {
			bursts[b] = append(bursts[b], j)
		} else {
			rest = append(rest, j)
		}
	}
	return bursts, rest
}

// Enqueued returns the args to enqueue for j: its Args with its planned faults added
// (instrument.WithFaults), which the instrumented functions inject.
func (j *PlannedJob) Enqueued() jobs.JobArgs {
	return instrument.WithFaults(j.Args, instrument.Faults{FailAttempts: j.FailAttempts, Poison: j.Poison, OverrunMS: j.OverrunMS, Crash: j.Crash})
}

// Len is the number of jobs.
func (p *Plan) Len() int { return len(p.byID) }

// Job returns the planned job with this id, or nil.
func (p *Plan) Job(id string) *PlannedJob { return p.byID[id] }

// All returns every job: the long job, the short transcodes, then the ledger and email jobs.
func (p *Plan) All() []*PlannedJob {
	out := []*PlannedJob{&p.Long}
	for i := range p.Transcode {
		out = append(out, &p.Transcode[i])
	}
	for i := range p.Ledger {
		out = append(out, &p.Ledger[i])
	}
	for i := range p.Email {
		out = append(out, &p.Email[i])
	}
	return out
}

// ExpectedDead is how many jobs must end in a dead-letter queue: the poison jobs, the crash loops,
// and the jobs whose planned failures use up their queue's attempts (maxAttempts maps a job kind to its
// worker's JOBKIT_MAX_ATTEMPTS; a kind missing from it counts as contract.DefaultMaxAttempts).
func (p *Plan) ExpectedDead(maxAttempts map[string]int) int {
	n := 0
	for _, j := range p.byID {
		max := maxAttempts[j.Args.Kind()]
		max = cmp.Or(max, contract.DefaultMaxAttempts)
		if j.Poison || j.Crash || j.FailAttempts >= max {
			n++
		}
	}
	return n
}

// Counts returns the number of poison and transient jobs.
func (p *Plan) Counts() (poison, transient int) {
	for _, j := range p.byID {
		if j.Poison {
			poison++
		}
		if j.FailAttempts > 0 {
			transient++
		}
	}
	return poison, transient
}

// ExtraCounts returns the number of overrunning jobs and of jobs sent twice.
func (p *Plan) ExtraCounts() (overrun, duplicated int) {
	for _, j := range p.byID {
		if j.OverrunMS > 0 {
			overrun++
		}
		if j.Duplicate {
			duplicated++
		}
	}
	return overrun, duplicated
}
