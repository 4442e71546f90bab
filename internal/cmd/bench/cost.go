package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/chaos"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// The cost benchmark runs costJobs plain idempotent jobs (the sample's email jobs, each behind the
// DynamoDB idempotency store, the rate limit left out: the features benchmark prices each
// feature on top) through the offline sample stack — the synthesized cdk.out deployed
// on the emulator, the real function binaries, the event source mappings — with every AWS request
// of the producer, the mappings and the functions going through a counting proxy
// (package faultproxy, no faults). Each API's requests are divided by the number of jobs and
// priced at list prices; the DynamoDB write and read request units are counted per request as
// on-demand billing counts them (faultproxy.CapacityUnits); Lambda invocations are the event
// source mappings' invocations.
//
// Everything counted from the first enqueue until the last job is deleted is in the figure: the
// requests of all three mappings, the idle ledger and transcode pollers included. The idle rate
// of the pollers is measured apart, afterwards, over costIdle.
//
//	cost_requests_per_job_<API>        requests per job of each API seen
//	cost_empty_receives_per_job        ReceiveMessage answers without a message
//	cost_write_units_per_job           DynamoDB write request units
//	cost_read_units_per_job            DynamoDB read request units
//	cost_invocations_per_job           Lambda invocations
//	cost_prices                        the prices used and their date
//	usd_per_million_jobs               the measured mix at those prices
//	usd_floor_per_million_jobs         0.1 SendMessageBatch, 0.1 ReceiveMessage, 0.1 DeleteMessageBatch, 2 WRU, 0.1 invocation
//	usd_naive_per_million_jobs         1 SendMessage, 0.1 ReceiveMessage, 0.1 DeleteMessageBatch, 1 GetItem (1 RRU) + 2 WRU, 0.1 invocation
//	usd_vs_floor, usd_vs_naive         the ratios
//	cost_receives_per_job_<Queue>_queue  ReceiveMessage calls per job, per sample queue
//	usd_per_million_jobs_own_queue     the mix with only the email queue's SQS requests (no idle pollers of the other queues)
//	usd_own_queue_vs_floor             its ratio to the floor
//	cost_idle_receives_per_hour        ReceiveMessage calls of the idle stack (3 mappings), per hour
//	cost_idle_receives_per_hour_<Queue>_queue  the same per queue
//	cost_idle_usd_per_month            their price over 30 days
func init() {
	register("cost", 60, benchCost)
}

const (
	costJobs    = 10000
	costTimeout = 10 * time.Minute
	costIdle    = 60 * time.Second
)

// List prices (us-east-1), as of the date below.
const (
	priceDate                = "2026-11-21"
	usdPerSQSRequest         = 0.40 / 1e6  // Standard queue, per request (64 KB chunk)
	usdPerWriteRequestUnit   = 0.625 / 1e6 // DynamoDB on-demand
	usdPerReadRequestUnit    = 0.125 / 1e6 // DynamoDB on-demand
	usdPerLambdaInvocation   = 0.20 / 1e6  // Lambda requests (duration is billed apart)
	costPricesLine           = "SQS $0.40/M requests; DynamoDB on-demand $0.625/M write request units, $0.125/M read request units; Lambda $0.20/M invocations (duration not included); list prices of " + priceDate
	costHoursPerMonth        = 24 * 30
	costWriteUnitsPerJobGoal = 2
)

// costMix is what one job costs in billable units.
type costMix struct {
	SQSRequests, WriteUnits, ReadUnits, Invocations float64
}

// usdPerMillion prices a million jobs of this mix.
func (m costMix) usdPerMillion() float64 {
	return 1e6 * (m.SQSRequests*usdPerSQSRequest + m.WriteUnits*usdPerWriteRequestUnit +
		m.ReadUnits*usdPerReadRequestUnit + m.Invocations*usdPerLambdaInvocation)
}

var (
	// costFloor: SendMessageBatch, ReceiveMessage and DeleteMessageBatch of 10, the claim and the
	// completion of the idempotency record, one invocation per 10 jobs.
	costFloor = costMix{SQSRequests: 0.1 + 0.1 + 0.1, WriteUnits: 2, Invocations: 0.1}
	// costNaive: one SendMessage per job, a GetItem (strongly consistent, up to 4 KB: 1 read
	// unit) before the two writes.
	costNaive = costMix{SQSRequests: 1 + 0.1 + 0.1, WriteUnits: 2, ReadUnits: 1, Invocations: 0.1}
)

// mixOf sums the proxy's counts into a per-job mix. The offline mappings' ListQueueTags calls are
// left out: they read a paused queue's tag, which stands in for a disabled mapping, and Lambda's
// own mapping makes no such call.
func mixOf(st faultproxy.Stats, invocations int64, jobsRun int) costMix {
	n := float64(jobsRun)
	sqs := st.Total("SQS.")
	sqs.Forwarded -= st.APIs["SQS.ListQueueTags"].Forwarded
	ddb := st.Total("DynamoDB.")
	return costMix{
		SQSRequests: float64(sqs.Forwarded) / n,
		WriteUnits:  ddb.WriteUnits / n,
		ReadUnits:   ddb.ReadUnits / n,
		Invocations: float64(invocations) / n,
	}
}

func benchCost(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("cdk.out", "manifest.json")); err != nil {
		return fmt.Errorf("cost: no cloud assembly in cdk.out (run make synth): %w", err)
	}
	// The plain idempotent job: the email function without its rate limit and its job states
	// (the features benchmark prices each feature apart) and with the sample's own mailer — the
	// instrumented build, which without faults in a job's args runs the sample's worker behind
	// the same middleware.
	stack, err := chaos.StartStack(ctx, chaos.StackConfig{
		AWS: cfg, CDKOut: "cdk.out", BuildDir: filepath.Join(".run", "bench", "functions"),
		Instrumented: true, Customize: plainEmail,
	})
	if err != nil {
		return err
	}
	defer func() { _ = stack.Close(context.WithoutCancel(ctx)) }()
	run, err := runCostJobs(ctx, stack)
	if err != nil {
		return err
	}
	// The idle stack: what the pollers cost while no job arrives.
	stack.Proxy.ResetStats()
	time.Sleep(costIdle)
	run.idle = stack.Proxy.Stats()
	if err := stack.Stop(); err != nil {
		return err
	}
	// Queue names of the sample kinds, for the per-queue figures.
	run.queueOf = map[string]string{}
	for kind, name := range samplejobs.Queues {
		if u := stack.QueueURL(kind); u != "" {
			run.queueOf[name] = u[strings.LastIndexByte(u, '/')+1:]
		}
	}
	mix := run.emit(emit)
	if mix.WriteUnits < costWriteUnitsPerJobGoal {
		return errors.New("cost: fewer than 2 write units per job: the idempotency records were not all written")
	}
	return nil
}

// costRun is what the cost benchmark measured.
type costRun struct {
	elapsed     time.Duration
	st, idle    faultproxy.Stats  // the AWS calls of the run, and of the idle stack after it
	invocations int64             // function invocations of the run
	queueOf     map[string]string // sample queue name -> the deployed queue's name
}

// runCostJobs enqueues costJobs email jobs onto the running stack and waits until all are done,
// counting the AWS calls (through the proxy) and the invocations they took.
func runCostJobs(ctx context.Context, stack *chaos.Stack) (*costRun, error) {
	producer, err := stack.Producer()
	if err != nil {
		return nil, err
	}
	emailQueue := stack.QueueURL(samplejobs.KindSendEmail)
	deleted := func() int64 {
		var n int64
		for _, m := range stack.Dev().Stats() {
			if m.QueueURL == emailQueue {
				n += m.Deleted
			}
		}
		return n
	}
	invocations := func() int64 {
		var n int64
		for _, m := range stack.Dev().Stats() {
			n += m.Invocations
		}
		return n
	}

	stack.Proxy.ResetStats()
	start := time.Now()
	inv0 := invocations()
	batch := make([]jobs.BatchJob, 0, 1000)
	for i := range costJobs {
		batch = append(batch, jobs.BatchJob{Args: samplejobs.SendEmail{To: fmt.Sprintf("user%05d@example.com", i), Subject: "cost"}})
		if len(batch) == cap(batch) || i == costJobs-1 {
			if _, err := producer.EnqueueBatch(ctx, batch); err != nil {
				return nil, fmt.Errorf("cost: enqueue: %w", err)
			}
			batch = batch[:0]
		}
	}
	for deleted() < costJobs {
		if time.Since(start) > costTimeout {
			return nil, fmt.Errorf("cost: only %d of %d jobs done after %s", deleted(), costJobs, costTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &costRun{elapsed: time.Since(start), st: stack.Proxy.Stats(), invocations: invocations() - inv0}, nil
}

// emit emits the cost figures of the run and returns its request mix.
func (r *costRun) emit(emit func(string, any)) costMix {
	st := r.st
	emit("cost_jobs", costJobs)
	emit("cost_seconds", r.elapsed.Seconds())
	for _, name := range st.Names() {
		a := st.APIs[name]
		_, op, _ := strings.Cut(name, ".")
		emit("cost_requests_per_job_"+op, float64(a.Forwarded)/costJobs)
	}
	recv := st.APIs["SQS.ReceiveMessage"]
	emit("cost_empty_receives_per_job", float64(recv.EmptyReceives)/costJobs)
	for _, name := range []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode} {
		q := st.Queues[r.queueOf[name]].APIs["SQS.ReceiveMessage"]
		emit("cost_receives_per_job_"+name+"_queue", float64(q.Forwarded)/costJobs)
	}
	mix := mixOf(st, r.invocations, costJobs)
	emit("cost_sqs_requests_per_job", mix.SQSRequests)
	emit("cost_write_units_per_job", mix.WriteUnits)
	emit("cost_read_units_per_job", mix.ReadUnits)
	emit("cost_invocations_per_job", mix.Invocations)
	emit("cost_prices", costPricesLine)
	usd, floor, naive := mix.usdPerMillion(), costFloor.usdPerMillion(), costNaive.usdPerMillion()
	emit("usd_per_million_jobs", usd)
	emit("usd_floor_per_million_jobs", floor)
	emit("usd_naive_per_million_jobs", naive)
	emit("usd_vs_floor", usd/floor)
	emit("usd_vs_naive", usd/naive)
	// The same run without the other queues' pollers: the email jobs' own requests.
	own := st
	own.APIs = map[string]faultproxy.APIStats{}
	for api, a := range st.APIs {
		if strings.HasPrefix(api, "SQS.") {
			a = st.Queues[r.queueOf[samplejobs.QueueEmail]].APIs[api]
		}
		own.APIs[api] = a
	}
	ownUSD := mixOf(own, r.invocations, costJobs).usdPerMillion()
	emit("usd_per_million_jobs_own_queue", ownUSD)
	emit("usd_own_queue_vs_floor", ownUSD/floor)
	perHour := float64(r.idle.APIs["SQS.ReceiveMessage"].Requests) / costIdle.Hours()
	emit("cost_idle_receives_per_hour", perHour)
	for _, name := range []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode} {
		q := r.idle.Queues[r.queueOf[name]].APIs["SQS.ReceiveMessage"]
		emit("cost_idle_receives_per_hour_"+name+"_queue", float64(q.Requests)/costIdle.Hours())
	}
	emit("cost_idle_usd_per_month", perHour*costHoursPerMonth*usdPerSQSRequest)
	return mix
}

// plainEmail makes the stack's email function run the plain idempotent job: the sample's worker
// with its own mailer (instrument.EnvSampleMailer), behind the idempotency middleware alone —
// its rate limit and job states left out, whose costs the features benchmark prices apart.
func plainEmail(_ context.Context, s *chaos.Stack) error {
	if err := s.LeaveOutEmailRateLimit(); err != nil {
		return err
	}
	env := s.WorkerEnv(samplejobs.KindSendEmail)
	delete(env, contract.EnvStateTable)
	delete(env, contract.EnvListJobs)
	return s.UseSampleMailer()
}
