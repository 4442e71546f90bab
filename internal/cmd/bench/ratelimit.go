package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The rate-limit benchmark runs a rate-limited kind on the offline stack as Lambda would: this
// very program, started as the function (benchFunctionEnv) in rateEnvironments execution
// environments behind the local Lambda Runtime API, fed by the SQS event source mapping with
// MaximumConcurrency rateEnvironments. The function's runtime has the delivery ledger and the
// bucket in one state table, and ratelimit.Middleware with a limit of rateLimit per second. A
// producer enqueues rateDemandFactor times that for rateSeconds. Every run prints its start time
// and attempt; the function prints its DynamoDB calls after each invocation.
//
//	ratelimit_limit_per_s          the limit
//	ratelimit_demand_per_s         the producer's rate
//	ratelimit_environments         concurrent execution environments (processes)
//	ratelimit_jobs, ratelimit_runs  jobs enqueued, and runs (more if SQS delivered one twice)
//	ratelimit_observed_max_per_s   the most job starts in any 1 s window [t, t+1s)
//	ratelimit_observed_mean_per_s  jobs / (last start - first start)
//	ratelimit_attempts_charged     sum over runs of (attempt - 1): snoozes charged as attempts
//	ratelimit_dead_lettered        messages on the DLQ
//	ratelimit_snoozes_per_job      rate-limit snoozes (SQS receives that did not run) per job
//	ratelimit_bucket_writes_per_job  UpdateItem calls on buckets per job (takes and refusals)
//	ratelimit_ledger_writes_per_job  delivery-ledger UpdateItem calls per job (one per snooze)
//	ratelimit_ledger_reads_per_job   delivery-ledger GetItem calls per job (one per redelivery)
//	ratelimit_late_wakes_per_job   jobs that started later than the tolerance after their token
//	                                (each charged one more token), per job; with the median and
//	                                the most of how late (ratelimit_late_wake_median_s, _max_s)
func init() {
	register("ratelimit", 60, benchRateLimit)
	benchFunctions["ratelimit"] = runRateLimitFunction
}

const (
	rateLimit        = 20
	rateDemandFactor = 4
	rateSeconds      = 8
	rateEnvironments = 4
	rateKind         = "bench.partner_call"
	envRateLimit     = "BENCH_RATE_LIMIT"
)

// benchFunctionEnv, when set, makes this program a Lambda function of the benchmark it names.
const benchFunctionEnv = "BENCH_FUNCTION"

var benchFunctions = map[string]func(){}

type partnerCall struct {
	N int `json:"n"`
}

func (partnerCall) Kind() string { return rateKind }

// runRateLimitFunction is the function's main.
func runRateLimitFunction() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	limit, _ := strconv.Atoi(os.Getenv(envRateLimit))
	var bucketWrites, ledgerWrites, ledgerReads, snoozes atomic.Int64
	table := os.Getenv(contract.EnvIdempotencyTable)
	bucketDB := dynamodb.NewFromConfig(awsCfg, countCalls(func(string) { bucketWrites.Add(1) }))
	ledgerDB := dynamodb.NewFromConfig(awsCfg, countCalls(func(op string) {
		if op == "GetItem" {
			ledgerReads.Add(1)
		} else {
			ledgerWrites.Add(1)
		}
	}))
	cfg.Deliveries = idempotency.NewDynamoDBStore(ledgerDB, table)
	cfg.Metrics = io.Discard
	// Info: the middleware's "woke late" lines are counted (ratelimit_late_wakes_per_job).
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[partnerCall](func(_ context.Context, j *jobs.Job[partnerCall]) error {
		fmt.Printf("RLRUN %d %d %d\n", time.Now().UnixMicro(), j.Attempt, j.Args.N)
		return nil
	}))
	workers.Use(ratelimit.Middleware(ratelimit.NewStore(bucketDB, table), ratelimit.Rules{
		rateKind: {Limit: ratelimit.PerSecond(limit)},
	}, nil))
	h := jobs.NewLambdaHandler(workers, cfg).HandleSQS
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp, err := h(ctx, ev)
		snoozes.Add(int64(len(resp.BatchItemFailures)))
		fmt.Printf("RLDDB %d %d %d %d %d\n", os.Getpid(), bucketWrites.Load(), ledgerWrites.Load(), ledgerReads.Load(), snoozes.Load())
		return resp, err
	})
}

// countCalls is a DynamoDB client option calling count with each request's operation name.
func countCalls(count func(op string)) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, awstest.OnCall(func(op string, _ any) { count(op) }))
	}
}

// rateOutput collects the function's RLRUN and RLDDB lines.
type rateOutput struct {
	devrun.LineReader
	mu       sync.Mutex
	starts   []int64 // Unix µs
	charged  int
	seen     map[int]bool
	counters map[string][4]int64 // pid → bucket writes, ledger writes, ledger reads, snoozes
	late     []float64           // late_s of the middleware's "woke late" lines
}

func newRateOutput() *rateOutput {
	o := &rateOutput{seen: map[int]bool{}, counters: map[string][4]int64{}}
	o.LineReader = devrun.LineReader{W: io.Discard, Read: func(l []byte) { o.line(string(l)) }}
	return o
}

func (o *rateOutput) line(l string) {
	f := strings.Fields(l)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case len(f) == 4 && f[0] == "RLRUN":
		at, _ := strconv.ParseInt(f[1], 10, 64)
		attempt, _ := strconv.Atoi(f[2])
		n, _ := strconv.Atoi(f[3])
		o.starts = append(o.starts, at)
		o.charged += attempt - 1
		o.seen[n] = true
	case len(f) == 6 && f[0] == "RLDDB":
		var c [4]int64
		for i := range c {
			c[i], _ = strconv.ParseInt(f[i+2], 10, 64)
		}
		o.counters[f[1]] = c
	case strings.Contains(l, `"msg":"rate limit: woke late"`):
		var rec struct {
			Late float64 `json:"late_s"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil {
			o.late = append(o.late, rec.Late)
		}
	case strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, "panic"):
		fmt.Fprintln(os.Stderr, l)
	}
}

func (o *rateOutput) distinct() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

func benchRateLimit(ctx context.Context, emit func(string, any)) error {
	awsCfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(awsCfg)
	table, drop, err := createBenchTable(ctx, dynamodb.NewFromConfig(awsCfg))
	if err != nil {
		return err
	}
	defer drop()
	// The redrive's maxReceiveCount covers the snoozes of a job that waits the whole run.
	q, err := newBenchQueue(ctx, client, "bench-ratelimit", 100)
	if err != nil {
		return err
	}
	defer q.drop()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	out := newRateOutput()
	rt, err := lambdaruntime.New(lambdaruntime.Function{
		Name: "bench-ratelimit", Bootstrap: self, Timeout: 30 * time.Second, MaxInstances: rateEnvironments,
		Env: map[string]string{
			benchFunctionEnv: "ratelimit", envRateLimit: strconv.Itoa(rateLimit),
			contract.EnvQueueURL: q.url, contract.EnvDLQURL: q.dlqURL, contract.EnvIdempotencyTable: table,
			contract.EnvVisibilityTimeout: "30",
		},
	}, &lambdaruntime.Options{Output: out, Endpoint: awstest.Endpoint()})
	if err != nil {
		return err
	}
	defer rt.Close()
	p, err := esm.New(client, rt, esm.Mapping{
		QueueURL: q.url, QueueARN: q.arn, BatchSize: 10, MaximumConcurrency: rateEnvironments, ReportBatchItemFailures: true,
	}, nil)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(runCtx) }()

	producer, err := jobs.NewClient(client, jobs.ClientOptions{DefaultQueueURL: q.url})
	if err != nil {
		return err
	}
	total := rateLimit * rateDemandFactor * rateSeconds
	perTick := rateLimit * rateDemandFactor / 10 // every 100 ms
	tick := time.NewTicker(100 * time.Millisecond)
	for sent := 0; sent < total; sent += perTick {
		batch := make([]jobs.BatchJob, perTick)
		for i := range batch {
			batch[i] = jobs.BatchJob{Args: partnerCall{N: sent + i}}
		}
		if _, err := producer.EnqueueBatch(ctx, batch); err != nil {
			return err
		}
		<-tick.C
	}
	tick.Stop()
	deadline := time.Now().Add(5 * time.Minute)
	for last := time.Now(); out.distinct() < total; {
		if time.Now().After(deadline) {
			return fmt.Errorf("ratelimit: %d of %d jobs ran in 5 minutes", out.distinct(), total)
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			s := p.Stats()
			fmt.Fprintf(os.Stderr, "ratelimit: %d of %d jobs ran; mapping received %d, invoked %d times\n", out.distinct(), total, s.Received, s.Invocations)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last invocations' counters
	stop()
	<-done

	dead, err := queueDepth(ctx, client, q.dlqURL)
	if err != nil {
		return err
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	var c [4]int64
	for _, v := range out.counters {
		for i := range c {
			c[i] += v[i]
		}
	}
	starts := out.starts
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	perJob := func(n int64) float64 { return float64(n) / float64(total) }
	emit("ratelimit_limit_per_s", rateLimit)
	emit("ratelimit_demand_per_s", rateLimit*rateDemandFactor)
	emit("ratelimit_environments", rateEnvironments)
	emit("ratelimit_jobs", total)
	emit("ratelimit_runs", len(starts))
	emit("ratelimit_observed_max_per_s", maxInWindow(starts, time.Second.Microseconds()))
	emit("ratelimit_observed_mean_per_s", float64(len(starts)-1)/(float64(starts[len(starts)-1]-starts[0])/1e6))
	emit("ratelimit_attempts_charged", out.charged)
	emit("ratelimit_dead_lettered", dead)
	emit("ratelimit_snoozes_per_job", perJob(c[3]))
	emit("ratelimit_bucket_writes_per_job", perJob(c[0]))
	emit("ratelimit_ledger_writes_per_job", perJob(c[1]))
	emit("ratelimit_ledger_reads_per_job", perJob(c[2]))
	sort.Float64s(out.late)
	emit("ratelimit_late_wakes_per_job", perJob(int64(len(out.late))))
	if len(out.late) > 0 {
		emit("ratelimit_late_wake_median_s", out.late[len(out.late)/2])
		emit("ratelimit_late_wake_max_s", out.late[len(out.late)-1])
	}
	return nil
}

// maxInWindow is the most of the sorted times ts in any half-open window [t, t+width).
func maxInWindow(ts []int64, width int64) int {
	best, j := 0, 0
	for i := range ts {
		for ts[i]-ts[j] >= width {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// benchQueue is a Standard queue with a DLQ (redrive after maxReceive receives) on the endpoint.
type benchQueue struct {
	url, arn, dlqURL string
	drop             func()
}

func newBenchQueue(ctx context.Context, client *sqs.Client, prefix string, maxReceive int) (*benchQueue, error) {
	name := prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return nil, err
	}
	b := &benchQueue{dlqURL: aws.ToString(dlq.QueueUrl)}
	b.drop = func() {
		_, _ = client.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(b.dlqURL)})
	}
	dlqARN, err := queueARN(ctx, client, b.dlqURL)
	if err != nil {
		b.drop()
		return nil, err
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"` + strconv.Itoa(maxReceive) + `"}`,
	}})
	if err != nil {
		b.drop()
		return nil, err
	}
	b.url = aws.ToString(q.QueueUrl)
	dropDLQ := b.drop
	b.drop = func() {
		_, _ = client.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(b.url)})
		dropDLQ()
	}
	if b.arn, err = queueARN(ctx, client, b.url); err != nil {
		b.drop()
		return nil, err
	}
	return b, nil
}

func queueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", err
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

// queueDepth is the queue's visible plus in-flight messages.
func queueDepth(ctx context.Context, client *sqs.Client, url string) (int, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		return 0, err
	}
	a, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	b, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return a + b, nil
}
