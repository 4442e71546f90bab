package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/setup"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// The features benchmark prices each of jobkit's features by the AWS requests it adds to a job.
// Every variant runs featureJobs jobs from enqueue to success through the same rig — a queue on
// the emulator, a jobs.Client, the worker runtime invoked as Lambda's event source mapping
// invokes it (batches of 10 received with ReceiveMessage, the successes deleted with one
// DeleteMessageBatch) — with every request going through the counting proxy; the requests are
// priced as the cost benchmark prices them, the write units of the state table's list index
// added (indexUnits).
//
// The plain job is the idempotent job as the Worker construct wires it (setup.Main's middleware:
// the idempotency claim and completion, the delivery ledger). Each other variant is the plain
// job with one feature on, or — for the features that need job states (unique, fan-out
// membership, per-job cancel) — the job_state variant with it on: its figures are what it adds
// to the variant it needs.
//
//	cost_plain_requests_per_job_<API>       the plain job's requests per job, by API
//	cost_plain_usd_per_million_jobs         the plain job's requests (this rig: one mapping, no idle pollers)
//	cost_added_requests_per_job_<feature>   what the feature adds, all requests
//	cost_added_write_units_per_job_<feature>, cost_added_read_units_per_job_<feature>
//	cost_added_usd_per_million_<feature>    its price per million jobs
//	cost_requests_per_cancel                a Client.Cancel of an enqueued job
//	ratelimit_writes_per_job                bucket writes of a rate-limited job (100/s: one item)
//	ratelimit_writes_per_job_sharded        the same at 1,000/s (three items, a take picks one)
//	scale_hottest_wcu_per_job_<feature>     the hottest shared item's (or index partition's) write
//	                                        units per job, for the features that share items
//	scale_jobs_per_s_at_partition_limit_<feature>  1,000 / that: the job rate at which it throttles
//	scale_fanout_add_*, scale_fanout_end_*  a batch of 1,000 members: the hottest item while they
//	                                        are added (100 an Add) and while they end, its write
//	                                        units per member and the members a second at the limit
//	duration_ms_per_invocation_noop         a batch of 10 no-op idempotent jobs, invocation time
//	duration_usd_per_million_jobs           Lambda duration of such jobs at the sample's memory
func init() {
	register("features", 59, benchFeatures)
}

const (
	featureJobs = 100
	// The sample functions' memory (the Worker construct's default) and Lambda's arm64 price
	// of a GB-second, with the cost benchmark's date.
	featureMemoryMB     = 256
	usdPerGBSecondARM64 = 0.0000133334
	// S3 Standard requests.
	usdPerS3Put = 0.005 / 1000
	usdPerS3Get = 0.0004 / 1000
	// featurePayloadBytes is the claim-checked job's args; the client's threshold is 1 KiB.
	featurePayloadBytes = 4096
	// partitionWCU is what one DynamoDB partition (one item, one index partition) takes a second.
	partitionWCU = 1000
)

// featureRig is one variant's queue, client and worker runtime.
type featureRig struct {
	env      *featureEnv
	url, arn string
	client   *jobs.Client
	handle   func(context.Context, []sqstypes.Message) (events.SQSEventResponse, error)
	forwards int // outbox forwarder invocations
	// less is what the variant's producer writes anyway, taken out of its count (the outbox's
	// business writes, as single PutItems).
	lessRequests, lessWriteUnits float64
	durations                    []time.Duration // each invocation's
}

// featureEnv is what every variant shares: the proxy, the clients through it and the table.
type featureEnv struct {
	direct  aws.Config // the emulator itself
	proxy   *faultproxy.Proxy
	cfg     aws.Config // through the proxy
	sqs     *sqs.Client
	db      *dynamodb.Client
	s3      *s3.Client
	index   *indexUnits
	table   string // idempotency and job states, as the IdempotencyTable construct makes it
	bucket  string
	streams string // the table's stream ARN
	drop    []func()
}

type featureJob struct {
	N       int    `json:"n"`
	Payload string `json:"payload,omitempty"`
}

func (featureJob) Kind() string { return "bench.feature" }

type featureDone struct{ state.BatchResult }

func (featureDone) Kind() string { return "bench.feature_done" }

// featureVariant wires one variant: the Client's options, the worker's setup and config, and
// how its jobs are enqueued (nil: EnqueueBatch of plain jobs).
type featureVariant struct {
	name, base string // base: the variant its cost is counted against
	client     func(e *featureEnv, o *jobs.ClientOptions, st *state.Table)
	worker     func(e *featureEnv, m *setup.Main, cfg *jobs.Config)
	states     bool
	list       bool // with states: listed by queue and state (ListJobs)
	// hot: the variant writes items that many jobs share (a bucket, batch counters, index
	// partitions): print its hottest item's or partition's write units per job.
	hot     bool
	enqueue func(ctx context.Context, r *featureRig, st *state.Table) error
}

func benchFeatures(ctx context.Context, emit func(string, any)) error {
	e, err := newFeatureEnv(ctx)
	if err != nil {
		return err
	}
	defer e.close()
	variants := []featureVariant{
		{name: "plain"},
		{name: "job_state", base: "plain", states: true},
		{name: "list_jobs", base: "job_state", states: true, list: true, hot: true},
		{name: "rate_limit", base: "plain", hot: true, worker: func(e *featureEnv, m *setup.Main, _ *jobs.Config) {
			m.Use(ratelimit.Middleware(ratelimit.NewStore(m.DB, e.table), ratelimit.Rules{
				featureJob{}.Kind(): {Limit: ratelimit.PerSecond(100)}, // one bucket item
			}, nil))
		}},
		{name: "rate_limit_sharded", base: "plain", hot: true, worker: func(e *featureEnv, m *setup.Main, _ *jobs.Config) {
			m.Use(ratelimit.Middleware(ratelimit.NewStore(m.DB, e.table), ratelimit.Rules{
				featureJob{}.Kind(): {Limit: ratelimit.PerSecond(1000)}, // 3 bucket items
			}, nil))
		}},
		{name: "claim_check", base: "plain", client: func(e *featureEnv, o *jobs.ClientOptions, _ *state.Table) {
			o.Payloads = &jobs.Payloads{S3: e.s3, Bucket: e.bucket, Threshold: 1024}
		}, worker: func(e *featureEnv, _ *setup.Main, cfg *jobs.Config) {
			cfg.S3, cfg.PayloadBucket = e.s3, e.bucket
		}, enqueue: func(ctx context.Context, r *featureRig, _ *state.Table) error {
			return r.enqueue(ctx, strings.Repeat("x", featurePayloadBytes))
		}},
		{name: "outbox", base: "plain", enqueue: func(ctx context.Context, r *featureRig, _ *state.Table) error {
			return r.viaOutbox(ctx)
		}},
		{name: "unique", base: "job_state", states: true, enqueue: func(ctx context.Context, r *featureRig, _ *state.Table) error {
			list := featureArgs(featureJobs, "")
			for i := range list {
				list[i].Opts = &jobs.EnqueueOpts{Unique: &jobs.UniqueOpts{Key: fmt.Sprint("u", i), Window: time.Hour, UntilDone: true}}
			}
			return r.enqueueList(ctx, list)
		}},
		{name: "fanout_member", base: "job_state", states: true, enqueue: func(ctx context.Context, r *featureRig, st *state.Table) error {
			b, err := st.OpenBatch(ctx, r.client, state.BatchOpts{Callback: featureDone{}})
			if err != nil {
				return err
			}
			if _, err := b.Add(ctx, featureArgs(featureJobs, "")); err != nil {
				return err
			}
			return b.Close(ctx)
		}},
	}
	// The invocation time first, before the outbox turns the table's stream on.
	if err := e.duration(ctx, emit); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	perJob := map[string]featureCost{}
	for _, v := range variants {
		c, err := e.run(ctx, v)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		perJob[v.name] = c
		if v.hot {
			// DynamoDB takes about 1,000 write units a second on one partition: the job rate at
			// which the hottest shared item (or index partition) reaches it.
			units := max(c.hotItem, c.hotPartition) / c.jobs
			emit("scale_hottest_wcu_per_job_"+v.name, units)
			emit("scale_jobs_per_s_at_partition_limit_"+v.name, partitionWCU/units)
		}
		if v.name == "plain" {
			for _, api := range c.st.Names() {
				if n := c.st.APIs[api].Forwarded; n > 0 {
					emit("cost_plain_requests_per_job_"+api, float64(n)/c.jobs)
				}
			}
			emit("cost_plain_usd_per_million_jobs", c.usdPerMillion())
			continue
		}
		base := perJob[v.base]
		emit("cost_added_requests_per_job_"+v.name, c.requests()-base.requests())
		emit("cost_added_write_units_per_job_"+v.name, c.writeUnits()-base.writeUnits())
		emit("cost_added_read_units_per_job_"+v.name, c.readUnits()-base.readUnits())
		emit("cost_added_usd_per_million_"+v.name, c.usdPerMillion()-base.usdPerMillion())
		switch v.name {
		case "rate_limit":
			emit("ratelimit_writes_per_job", c.writeUnits()-base.writeUnits())
		case "rate_limit_sharded":
			emit("ratelimit_writes_per_job_sharded", c.writeUnits()-base.writeUnits())
		}
	}
	if err := e.cancelCost(ctx, emit); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if err := e.fanoutHeat(ctx, emit); err != nil {
		return fmt.Errorf("fan-out heat: %w", err)
	}
	return nil
}

// Fan-out batches at scale: one batch of fanoutMembers members, added fanoutAdd at a time (each
// Add raises every shard it touches, on the condition that the batch is open), then run. The
// hottest item of each phase, per member, says how many members a second one batch can take
// being added and ending before an item reaches DynamoDB's partition limit.
const (
	fanoutMembers = 1000
	fanoutAdd     = 100
)

func (e *featureEnv) fanoutHeat(ctx context.Context, emit func(string, any)) error {
	r, st, err := e.rig(ctx, featureVariant{name: "fanout-heat", states: true})
	if err != nil {
		return err
	}
	e.index.hottest() // reset
	b, err := st.OpenBatch(ctx, r.client, state.BatchOpts{Callback: featureDone{}})
	if err != nil {
		return err
	}
	for i := 0; i < fanoutMembers; i += fanoutAdd {
		if _, err := b.Add(ctx, featureArgs(fanoutAdd, "")); err != nil {
			return err
		}
	}
	if err := b.Close(ctx); err != nil {
		return err
	}
	item, units, _, _ := e.index.hottest()
	emit("scale_fanout_add_hottest_item", itemClass(item))
	emit("scale_fanout_add_hottest_wcu_per_member", units/fanoutMembers)
	emit("scale_fanout_add_members_per_s_at_partition_limit", partitionWCU/(units/fanoutMembers))
	if _, err := r.drain(ctx); err != nil {
		return err
	}
	item, units, _, _ = e.index.hottest()
	emit("scale_fanout_end_hottest_item", itemClass(item))
	emit("scale_fanout_end_hottest_wcu_per_member", units/fanoutMembers)
	emit("scale_fanout_end_members_per_s_at_partition_limit", partitionWCU/(units/fanoutMembers))
	emit("scale_fanout_shards", state.DefaultShards)
	return nil
}

// itemClass names an item by its key's prefix, its ids left out: "batch#…", "batch#…#<n>".
func itemClass(id string) string {
	parts := strings.Split(id, "#")
	for i := 1; i < len(parts); i++ {
		if _, err := strconv.Atoi(parts[i]); err == nil && i > 1 {
			parts[i] = "<n>"
		} else {
			parts[i] = "…"
		}
	}
	return strings.Join(parts, "#")
}

// featureCost is what a variant's jobs asked of AWS.
type featureCost struct {
	st                           faultproxy.Stats
	index                        float64 // the list index's write units
	invocations, forwards        float64 // worker and outbox forwarder invocations
	jobs                         float64
	lessRequests, lessWriteUnits float64 // per job, taken out (featureRig.less*)
	hotItem, hotPartition        float64 // write units of the hottest item and index partition
}

func (c featureCost) requests() float64 {
	return float64(c.st.Total("").Forwarded)/c.jobs - c.lessRequests
}
func (c featureCost) writeUnits() float64 {
	return (c.st.Total("DynamoDB.").WriteUnits+c.index)/c.jobs - c.lessWriteUnits
}
func (c featureCost) readUnits() float64 { return c.st.Total("DynamoDB.").ReadUnits / c.jobs }

func (c featureCost) usdPerMillion() float64 {
	mix := costMix{
		SQSRequests: float64(c.st.Total("SQS.").Forwarded) / c.jobs,
		WriteUnits:  c.writeUnits(), ReadUnits: c.readUnits(),
		Invocations: (c.invocations + c.forwards) / c.jobs,
	}
	// S3 by HTTP method (the proxy names S3's REST calls so): PUT at the PUT price, GET and
	// HEAD at the GET price, DELETE free.
	s3 := float64(c.st.APIs["s3.PUT"].Forwarded)*usdPerS3Put +
		float64(c.st.APIs["s3.GET"].Forwarded+c.st.APIs["s3.HEAD"].Forwarded)*usdPerS3Get
	return mix.usdPerMillion() + 1e6*s3/c.jobs
}

func newFeatureEnv(ctx context.Context) (e *featureEnv, err error) {
	direct, err := awstest.LoadConfig(ctx)
	if err != nil {
		return nil, err
	}
	e = &featureEnv{direct: direct, index: newIndexUnits()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.proxy, err = faultproxy.Start(aws.ToString(direct.BaseEndpoint), nil); err != nil {
		return e, err
	}
	e.drop = append(e.drop, func() { _ = e.proxy.Close() })
	e.cfg = e.proxy.Config(direct)
	e.sqs = sqs.NewFromConfig(e.cfg)
	e.db = dynamodb.NewFromConfig(e.cfg, e.index.option)
	e.s3 = jobs.NewPayloadS3Client(e.cfg)
	suffix := randomSuffix()
	table, drop, err := createBenchTable(ctx, dynamodb.NewFromConfig(direct))
	if err != nil {
		return e, err
	}
	e.table = table
	e.drop = append(e.drop, drop)
	e.bucket = "jk-bench-payloads-" + suffix
	if _, err := e.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(e.bucket)}); err != nil {
		return e, fmt.Errorf("bucket: %w", err)
	}
	return e, nil
}

// enableStream turns on the table's stream (new images), for the outbox's forwarder.
func (e *featureEnv) enableStream(ctx context.Context) error {
	db := dynamodb.NewFromConfig(e.direct)
	out, err := db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:           aws.String(e.table),
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage},
	})
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	e.streams = aws.ToString(out.TableDescription.LatestStreamArn)
	return nil
}

func (e *featureEnv) close() {
	for i := len(e.drop) - 1; i >= 0; i-- {
		e.drop[i]()
	}
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rig makes a variant's queue, client and worker runtime.
func (e *featureEnv) rig(ctx context.Context, v featureVariant) (*featureRig, *state.Table, error) {
	q, err := e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jk-bench-feature-" + strings.ReplaceAll(v.name, "_", "-") + "-" + randomSuffix())})
	if err != nil {
		return nil, nil, err
	}
	r := &featureRig{env: e, url: aws.ToString(q.QueueUrl)}
	e.drop = append(e.drop, func() {
		_, _ = e.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	})
	if r.arn, err = queueARN(ctx, e.sqs, r.url); err != nil {
		return nil, nil, err
	}
	var st *state.Table
	opts := jobs.ClientOptions{DefaultQueueURL: r.url}
	m := &setup.Main{Name: v.name, DB: e.db, Table: e.table, Store: idempotency.NewDynamoDBStore(e.db, e.table), Workers: jobs.NewWorkers()}
	cfg := jobs.Config{QueueURL: r.url, DLQURL: r.url, SQS: e.sqs, Deliveries: m.Store,
		Metrics: io.Discard, Logger: slog.New(slog.DiscardHandler)}
	if v.states {
		if st, err = state.New(e.db, e.table, &state.Options{SQS: e.sqs, ListJobs: v.list}); err != nil {
			return nil, nil, err
		}
		opts.State, m.States, cfg.States = st, st, st
		m.Store = idempotency.NewDynamoDBStore(e.db, e.table, func(o *idempotency.DynamoDBOptions) { o.ListJobs = v.list })
		cfg.Deliveries = m.Store
	}
	if v.client != nil {
		v.client(e, &opts, st)
	}
	if v.worker != nil {
		v.worker(e, m, &cfg)
	}
	if r.client, err = jobs.NewClient(e.sqs, opts); err != nil {
		return nil, nil, err
	}
	jobs.AddWorker(m.Workers, jobs.WorkFunc[featureJob](func(context.Context, *jobs.Job[featureJob]) error { return nil }))
	jobs.AddWorker(m.Workers, jobs.WorkFunc[featureDone](func(context.Context, *jobs.Job[featureDone]) error { return nil }))
	m.Workers.Use(m.Middleware()...)
	h := jobs.NewLambdaHandler(m.Workers, cfg).HandleSQS
	r.handle = func(ctx context.Context, msgs []sqstypes.Message) (events.SQSEventResponse, error) {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return h(lctx, jobstest.EventFromMessages(r.arn, msgs))
	}
	return r, st, nil
}

func featureArgs(n int, payload string) []jobs.BatchJob {
	list := make([]jobs.BatchJob, n)
	for i := range list {
		list[i] = jobs.BatchJob{Args: featureJob{N: i, Payload: payload}}
	}
	return list
}

func (r *featureRig) enqueue(ctx context.Context, payload string) error {
	return r.enqueueList(ctx, featureArgs(featureJobs, payload))
}

func (r *featureRig) enqueueList(ctx context.Context, list []jobs.BatchJob) error {
	res, err := r.client.EnqueueBatch(ctx, list)
	if err != nil {
		return err
	}
	for _, x := range res {
		if x.Err != nil {
			return x.Err
		}
	}
	return nil
}

// viaOutbox writes each job with a business item in one transaction (outbox.Write), then has
// the forwarder send them from the table's stream, in Lambda's batches of 100 records. The
// stream's reads are not counted: Lambda's event source mapping reads DynamoDB Streams at no
// charge.
func (r *featureRig) viaOutbox(ctx context.Context) error {
	e := r.env
	if err := e.enableStream(ctx); err != nil {
		return err
	}
	ob, err := outbox.New(outbox.Config{Table: e.table, Client: r.client})
	if err != nil {
		return err
	}
	for i := range featureJobs {
		business := ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
			TableName: aws.String(e.table),
			Item:      map[string]ddbtypes.AttributeValue{idempotency.AttrID: &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("order#%s#%d", r.url, i)}},
		}}
		if _, err := ob.Write(ctx, e.db, []ddbtypes.TransactWriteItem{business}, outbox.Job{Args: featureJob{N: i}}); err != nil {
			return err
		}
	}
	// Each transaction holds the business write the producer makes without the outbox too:
	// its PutItem (one request, one write unit) is not the outbox's cost.
	r.lessRequests, r.lessWriteUnits = 1, 1
	fw, err := outbox.NewForwarder(outbox.ForwarderConfig{SQS: e.sqs, DynamoDB: e.db, Table: e.table, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	recs, err := outboxRecords(ctx, dynamodbstreams.NewFromConfig(e.direct), e.streams, r.url)
	if err != nil {
		return err
	}
	for i := 0; i < len(recs); i += 100 {
		ev := events.DynamoDBEvent{Records: recs[i:min(i+100, len(recs))]}
		resp, err := fw.Handle(ctx, ev)
		if err != nil {
			return err
		}
		if len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("forwarder: %d records failed", len(resp.BatchItemFailures))
		}
		r.forwards++
	}
	return nil
}

// run runs v's jobs from enqueue until its queue is empty and returns what they cost.
func (e *featureEnv) run(ctx context.Context, v featureVariant) (featureCost, error) {
	r, st, err := e.rig(ctx, v)
	if err != nil {
		return featureCost{}, err
	}
	e.proxy.ResetStats()
	index0 := e.index.total()
	e.index.hottest() // reset the heat
	enqueue := v.enqueue
	if enqueue == nil {
		enqueue = func(ctx context.Context, r *featureRig, _ *state.Table) error { return r.enqueue(ctx, "") }
	}
	if err := enqueue(ctx, r, st); err != nil {
		return featureCost{}, err
	}
	invocations, err := r.drain(ctx)
	if err != nil {
		return featureCost{}, err
	}
	_, hotItem, _, hotPartition := e.index.hottest()
	return featureCost{st: e.proxy.Stats(), index: e.index.total() - index0, invocations: float64(invocations),
		forwards: float64(r.forwards), jobs: featureJobs, lessRequests: r.lessRequests, lessWriteUnits: r.lessWriteUnits,
		hotItem: hotItem, hotPartition: hotPartition}, nil
}

// drain runs every message of the queue as Lambda's mapping would (runQueue), timing each
// invocation; a failed job fails it. It returns the invocations.
func (r *featureRig) drain(ctx context.Context) (int, error) {
	return runQueue(ctx, r.env.sqs, r.url, func(ctx context.Context, msgs []sqstypes.Message) error {
		start := time.Now()
		resp, err := r.handle(ctx, msgs)
		r.durations = append(r.durations, time.Since(start))
		if err == nil && len(resp.BatchItemFailures) > 0 {
			err = fmt.Errorf("%d jobs failed", len(resp.BatchItemFailures))
		}
		return err
	})
}

// runQueue hands every message of queue url to invoke as Lambda's mapping does — received up to
// 10 at a time with their system attributes, deleted in one DeleteMessageBatch once invoke
// succeeds — until two receives in a row come back empty, and returns the invocations.
func runQueue(ctx context.Context, client *sqs.Client, url string, invoke func(context.Context, []sqstypes.Message) error) (int, error) {
	invocations := 0
	for empty := 0; empty < 2; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return 0, err
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		invocations++
		if err := invoke(ctx, out.Messages); err != nil {
			return 0, err
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			return 0, err
		}
	}
	return invocations, nil
}

// outboxRecords reads the table's stream from its start and returns the INSERTs of the outbox
// items of queueURL as the forwarder's mapping delivers them (its filter passes only outbox
// INSERTs; jobs of the other variants' queues are left out).
func outboxRecords(ctx context.Context, api *dynamodbstreams.Client, streamARN, queueURL string) ([]events.DynamoDBEventRecord, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		var recs []events.DynamoDBEventRecord
		desc, err := api.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
		if err != nil {
			return nil, err
		}
		for _, sh := range desc.StreamDescription.Shards {
			it, err := api.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(streamARN), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			if err != nil {
				return nil, err
			}
			for iter, empty := it.ShardIterator, 0; iter != nil && empty < 3; {
				out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				if err != nil {
					return nil, err
				}
				for _, rec := range out.Records {
					ev := esm.DynamoDBEventRecord(rec, streamARN)
					id := ev.Change.NewImage[outbox.AttrID]
					q := ev.Change.NewImage[outbox.AttrQueueURL]
					if ev.EventName == string(events.DynamoDBOperationTypeInsert) && id.DataType() == events.DataTypeString &&
						strings.HasPrefix(id.String(), outbox.KeyPrefix) && q.DataType() == events.DataTypeString && q.String() == queueURL {
						recs = append(recs, ev)
					}
				}
				if len(out.Records) == 0 {
					empty++
				} else {
					empty = 0
				}
				iter = out.NextShardIterator
			}
		}
		if len(recs) >= featureJobs || time.Now().After(deadline) {
			if len(recs) < featureJobs {
				return nil, fmt.Errorf("outbox: %d of %d stream records", len(recs), featureJobs)
			}
			return recs, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cancelCost counts what a Client.Cancel of an enqueued job asks of AWS.
func (e *featureEnv) cancelCost(ctx context.Context, emit func(string, any)) error {
	const n = 10
	r, _, err := e.rig(ctx, featureVariant{name: "cancel", states: true})
	if err != nil {
		return err
	}
	res, err := r.client.EnqueueBatch(ctx, featureArgs(n, ""))
	if err != nil {
		return err
	}
	e.proxy.ResetStats()
	index0 := e.index.total()
	for _, x := range res {
		if _, err := r.client.Cancel(ctx, x.ID); err != nil {
			return err
		}
	}
	c := featureCost{st: e.proxy.Stats(), index: e.index.total() - index0, jobs: n}
	emit("cost_requests_per_cancel", c.requests())
	emit("cost_write_units_per_cancel", c.writeUnits())
	if _, err := r.drain(ctx); err != nil { // the cancelled jobs are deleted unrun
		return err
	}
	return nil
}

// duration prices Lambda's billed duration of the plain job from its rig's invocations: a batch
// of 10 no-op idempotent jobs, billed per started millisecond at featureMemoryMB on arm64.
func (e *featureEnv) duration(ctx context.Context, emit func(string, any)) error {
	r, _, err := e.rig(ctx, featureVariant{name: "duration"})
	if err != nil {
		return err
	}
	if err := r.enqueue(ctx, ""); err != nil {
		return err
	}
	if _, err := r.drain(ctx); err != nil {
		return err
	}
	if len(r.durations) == 0 {
		return errors.New("no invocation")
	}
	ms := make([]float64, len(r.durations))
	for i, d := range r.durations {
		ms[i] = float64(d.Microseconds()) / 1000
	}
	perInvocation := median(ms)
	jobsPerInvocation := float64(featureJobs) / float64(len(ms))
	billedPerJob := math.Ceil(perInvocation) / jobsPerInvocation
	emit("duration_ms_per_invocation_noop", perInvocation)
	emit("duration_jobs_per_invocation", jobsPerInvocation)
	emit("duration_billed_ms_per_job", billedPerJob)
	emit("duration_usd_per_million_jobs", 1e6*billedPerJob/1000*featureMemoryMB/1024*usdPerGBSecondARM64)
	return nil
}
