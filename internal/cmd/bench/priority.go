package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/localstack/emulator"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The priority benchmark runs one logical queue with two lanes on the offline stack, each lane a
// queue of its own with its own DLQ, its own event source mapping (MaximumConcurrency
// priorityLaneConcurrency) and its own pool of execution environments of this very program as the
// function (benchFunctionEnv "priority"), as the PriorityQueue construct deploys them. A client
// routes by EnqueueOpts.Priority. Each lane's queue is on an emulator process of its own, as SQS
// serves each queue apart (startLaneEmulator); the lanes' functions share the machine's CPUs. A
// job's wait is from its enqueued_at to the start of its run.
// The figures come from priorityPairs alternating pairs of runs (pairs.go): a quiet run, where
// priorityCritical critical jobs are enqueued at priorityRate per second with nothing else, and a
// flooded run, where priorityBulk bulk jobs are enqueued (EnqueueBatch) and then the same critical
// stream; the bulk lane drains (for at most priorityDrain) before the next run.
//
//	priority_critical_p95_wait_noflood_s  critical p95 wait with no flood (median of the runs)
//	priority_critical_p95_wait_s          critical p95 wait with the bulk lane flooded (median)
//	priority_critical_slowdown            median of the pairs' ratios, with _spread (goal: ≤ 2)
//	priority_critical_p95_to_receive_noflood_s, priority_critical_p95_to_receive_s
//	                                      the part of the wait before the first receive
//	                                      (send, and time in the queue until a poller took it;
//	                                      SQS's ApproximateFirstReceiveTimestamp, ms), p95, median
//	priority_bulk_jobs_run_during_critical  bulk jobs run by the end of the flooded critical stream
//	priority_bulk_p95_wait_s              bulk p95 wait, of the bulk jobs run by the end (median)
//	priority_bulk_jobs_run                bulk jobs run by the end (of priorityBulk; median)
func init() {
	register("priority", 61, benchPriority)
	benchFunctions["priority"] = runPriorityFunction
}

const (
	priorityCritical        = 100
	priorityRate            = 10
	priorityBulk            = 10000
	priorityLaneConcurrency = 2
	priorityDrain           = 3 * time.Minute
	priorityPairs           = minPairs
)

type laneJob struct {
	Lane string `json:"lane"`
	N    int    `json:"n"`
	// Work is how long the run takes (0 for the benchmark: the wait is what it measures).
	Work time.Duration `json:"work,omitempty"`
}

func (laneJob) Kind() string { return "bench.lane_job" }

// runPriorityFunction is the function's main: each run prints its lane, number and wait.
func runPriorityFunction() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[laneJob](func(_ context.Context, j *jobs.Job[laneJob]) error {
		// The wait, and its part before the first receive (ApproximateFirstReceiveTimestamp, ms).
		fmt.Printf("PRRUN %s %d %d %d\n", j.Args.Lane, j.Args.N, time.Since(j.EnqueuedAt).Microseconds(), j.FirstReceivedAt.Sub(j.EnqueuedAt).Microseconds())
		time.Sleep(j.Args.Work)
		return nil
	}))
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

// laneOutput collects the runs' waits by lane from the functions' output lines.
type laneOutput struct {
	devrun.LineReader
	mu     sync.Mutex
	waits  map[string]map[int]time.Duration // lane → job → wait (first run)
	queued map[string]map[int]time.Duration // lane → job → enqueue to first receive
}

func (o *laneOutput) line(l []byte) {
	f := strings.Fields(string(l))
	if len(f) == 5 && f[0] == "PRRUN" {
		n, _ := strconv.Atoi(f[2])
		us, _ := strconv.ParseInt(f[3], 10, 64)
		qus, _ := strconv.ParseInt(f[4], 10, 64)
		o.mu.Lock()
		defer o.mu.Unlock()
		if _, ok := o.waits[f[1]][n]; !ok {
			o.waits[f[1]][n] = time.Duration(us) * time.Microsecond
			o.queued[f[1]][n] = time.Duration(qus) * time.Microsecond
		}
	} else if len(f) > 0 && strings.Contains(f[0], "ERROR") {
		fmt.Fprintln(os.Stderr, strings.Join(f, " "))
	}
}

func (o *laneOutput) count(lane string, from, to int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for k := range o.waits[lane] {
		if k >= from && k < to {
			n++
		}
	}
	return n
}

func (o *laneOutput) p95(lane string, from, to int) (time.Duration, int) {
	return o.p95Of(o.waits, lane, from, to)
}

// p95Of is the p95 of the durations of lane's jobs from..to-1 in m.
func (o *laneOutput) p95Of(m map[string]map[int]time.Duration, lane string, from, to int) (time.Duration, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var w []time.Duration
	for k, d := range m[lane] {
		if k >= from && k < to {
			w = append(w, d)
		}
	}
	if len(w) == 0 {
		return 0, 0
	}
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	return w[(len(w)*95+99)/100-1], len(w)
}

func benchPriority(ctx context.Context, emit func(string, any)) error {
	awsCfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	// SQS serves each queue apart: one queue's load does not slow another's receives. moto is one
	// Python process that answers one call at a time, so on one emulator the bulk lane's
	// receives and deletes would queue the critical lane's behind them — a cost of the emulator,
	// not of lanes. The bulk lane gets an emulator process of its own (the CPU stays shared).
	bulkEndpoint, stopBulk, err := startLaneEmulator(ctx)
	if err != nil {
		return fmt.Errorf("the bulk lane's emulator: %w", err)
	}
	defer stopBulk()
	bulkCfg := awsCfg.Copy()
	bulkCfg.BaseEndpoint = &bulkEndpoint
	clients := map[string]*sqs.Client{"critical": sqs.NewFromConfig(awsCfg), "bulk": sqs.NewFromConfig(bulkCfg)}
	endpoints := map[string]string{"critical": awstest.Endpoint(), "bulk": bulkEndpoint}
	out := newLaneOutput()
	lanes, stopLanes, err := startLanes(ctx, clients, endpoints, out)
	if err != nil {
		return err
	}
	defer stopLanes()
	// The service's client routes by priority (EnqueueOpts.Priority); the flood, on the other
	// emulator, goes through a client of that endpoint with the same lanes.
	laneMap := map[string]map[string]string{lanes["critical"]: lanes}
	producer, err := jobs.NewClient(clients["critical"], jobs.ClientOptions{DefaultQueueURL: lanes["critical"], Lanes: laneMap})
	if err != nil {
		return err
	}
	bulkProducer, err := jobs.NewClient(clients["bulk"], jobs.ClientOptions{DefaultQueueURL: lanes["critical"], Lanes: laneMap})
	if err != nil {
		return err
	}
	critical := func(from int) error {
		tick := time.NewTicker(time.Second / priorityRate)
		defer tick.Stop()
		for i := from; i < from+priorityCritical; i++ {
			if _, err := producer.Enqueue(ctx, laneJob{Lane: "critical", N: i}, &jobs.EnqueueOpts{Priority: "critical"}); err != nil {
				return err
			}
			<-tick.C
		}
		return waitFor(func() bool { return out.count("critical", from, from+priorityCritical) == priorityCritical }, time.Minute)
	}
	// A pair is a quiet run (the critical stream alone) and a flooded one (the same stream once
	// priorityBulk bulk jobs are on the bulk lane, which then drains before the next run).
	var quietQueued, floodedQueued, bulkWaits, bulkRun, bulkDuring []float64
	quiet := func(pair int) (float64, error) {
		from := (2*pair + 0) * priorityCritical
		if err := critical(from); err != nil {
			return 0, fmt.Errorf("critical, no flood: %w", err)
		}
		p, _ := out.p95("critical", from, from+priorityCritical)
		q, _ := out.p95Of(out.queued, "critical", from, from+priorityCritical)
		quietQueued = append(quietQueued, q.Seconds())
		return p.Seconds(), nil
	}
	flooded := func(pair int) (float64, error) {
		from, bulkFrom := (2*pair+1)*priorityCritical, pair*priorityBulk
		flood := make([]jobs.BatchJob, priorityBulk)
		for i := range flood {
			flood[i] = jobs.BatchJob{Args: laneJob{Lane: "bulk", N: bulkFrom + i}, Opts: &jobs.EnqueueOpts{Priority: "bulk"}}
		}
		if _, err := bulkProducer.EnqueueBatch(ctx, flood); err != nil {
			return 0, fmt.Errorf("flood: %w", err)
		}
		if err := critical(from); err != nil {
			return 0, fmt.Errorf("critical, flood: %w", err)
		}
		p, _ := out.p95("critical", from, from+priorityCritical)
		q, _ := out.p95Of(out.queued, "critical", from, from+priorityCritical)
		floodedQueued = append(floodedQueued, q.Seconds())
		bulkDuring = append(bulkDuring, float64(out.count("bulk", bulkFrom, bulkFrom+priorityBulk)))
		_ = waitFor(func() bool { return out.count("bulk", bulkFrom, bulkFrom+priorityBulk) == priorityBulk }, priorityDrain)
		b, n := out.p95("bulk", bulkFrom, bulkFrom+priorityBulk)
		bulkWaits, bulkRun = append(bulkWaits, b.Seconds()), append(bulkRun, float64(n))
		return p.Seconds(), nil
	}
	quiets, floods, err := alternate(priorityPairs, quiet, flooded)
	if err != nil {
		return err
	}

	emit("priority_pairs", priorityPairs)
	emit("priority_lane_concurrency", priorityLaneConcurrency)
	emit("priority_emulators", 2)
	emit("priority_critical_p95_wait_noflood_s", median(quiets))
	emit("priority_critical_p95_wait_s", median(floods))
	emitRatio(emit, "priority_critical_slowdown", floods, quiets)
	emit("priority_critical_p95_to_receive_noflood_s", median(quietQueued))
	emit("priority_critical_p95_to_receive_s", median(floodedQueued))
	emit("priority_bulk_jobs_run_during_critical", int(median(bulkDuring)))
	emit("priority_bulk_p95_wait_s", median(bulkWaits))
	emit("priority_bulk_jobs_run", int(median(bulkRun)))
	return nil
}

func newLaneOutput() *laneOutput {
	o := &laneOutput{waits: map[string]map[int]time.Duration{"critical": {}, "bulk": {}},
		queued: map[string]map[int]time.Duration{"critical": {}, "bulk": {}}}
	o.LineReader = devrun.LineReader{W: io.Discard, Read: o.line}
	return o
}

// startLanes runs the critical and bulk lanes as the PriorityQueue construct deploys them, each
// on its client's endpoint: a queue with its DLQ, an SQS event source mapping with
// MaximumConcurrency priorityLaneConcurrency, and a pool of that many execution environments of
// this very program as the function (benchFunctionEnv "priority"), writing its runs to out. It
// returns the lanes' queue URLs and a func that stops everything and deletes the queues.
func startLanes(ctx context.Context, clients map[string]*sqs.Client, endpoints map[string]string, out *laneOutput) (map[string]string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	lanes := map[string]string{}
	var undo []func()
	stop := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	undo = append(undo, func() { cancel(); wg.Wait() })
	for _, lane := range []string{"critical", "bulk"} {
		client := clients[lane]
		q, err := newBenchQueue(ctx, client, "bench-lane-"+lane, 5)
		if err != nil {
			stop()
			return nil, nil, err
		}
		lanes[lane] = q.url
		rt, err := lambdaruntime.New(lambdaruntime.Function{
			Name: "bench-lane-" + lane, Bootstrap: self, Timeout: 30 * time.Second, MaxInstances: priorityLaneConcurrency,
			Env: map[string]string{benchFunctionEnv: "priority", contract.EnvQueueURL: q.url, contract.EnvDLQURL: q.dlqURL},
		}, &lambdaruntime.Options{Output: out, Endpoint: endpoints[lane]})
		if err != nil {
			q.drop()
			stop()
			return nil, nil, err
		}
		p, err := esm.New(client, rt, esm.Mapping{
			QueueURL: q.url, QueueARN: q.arn, BatchSize: 10, MaximumConcurrency: priorityLaneConcurrency, ReportBatchItemFailures: true,
		}, nil)
		if err != nil {
			rt.Close()
			q.drop()
			stop()
			return nil, nil, err
		}
		// Stopped in reverse: the pollers first (cancel), then each runtime, then its queues.
		undo = append([]func(){func() { q.drop() }, func() { rt.Close() }}, undo...)
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(runCtx) }()
	}
	return lanes, stop, nil
}

// waitFor polls done until it holds or limit passes.
func waitFor(done func() bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not done in %s", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// startLaneEmulator starts a moto process of its own on a free loopback port (emulator.Start) and
// returns its endpoint and how to stop it.
func startLaneEmulator(ctx context.Context) (string, func(), error) {
	root, err := repoRoot()
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	endpoint := "http://" + l.Addr().String()
	_ = l.Close()
	e, err := emulator.Start(ctx, root, endpoint)
	if err != nil {
		return "", nil, err
	}
	return endpoint, func() { _ = e.Stop() }, nil
}
