package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/internal/chaos"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// The e2e benchmark measures jobs end to end on the offline stack against the plainest loop the
// same emulator allows, in the same run, in alternating pairs:
//
//   - stack: e2eJobs idempotent email jobs (the sample's SendEmail, DynamoDB idempotency on, its
//     rate limit and job states left out: plainEmail) enqueued with
//     jobs.Client.EnqueueBatch onto the offline sample stack (chaos.StartStack: cdk.out deployed
//     on the emulator, the email function's instrumented build — the sample's worker and
//     middleware, which reads the rate limit's switch; see benchE2E — behind the local Lambda
//     Runtime API, the local event source mapping with the deployed batch size, window and
//     concurrency), from the first enqueue until the mapping has deleted the last one.
//   - raw: an aws-sdk-go-v2 loop on a queue of the same emulator: SendMessageBatch of 10 (four
//     calls in flight, as EnqueueBatch), and as many pollers as the email mapping's
//     MaximumConcurrency, each receiving 10 with a long poll and deleting them in one
//     DeleteMessageBatch; no idempotency, no function, no job decode.
//   - same work: the raw loop doing, for each message it receives, the two writes a jobkit job
//     makes — the idempotency claim, a conditional PutItem, and its completion, a conditional
//     UpdateItem, written by hand with the SDK — on the stack's own idempotency table, the
//     messages of a receive concurrently (as the runtime runs a batch's jobs), then the delete.
//     What is left between this side and the stack is the kit: the envelope, the function,
//     the Lambda runtime and the mapping emulation, the delivery ledger and the rest of the runtime.
//
// Every call of both sides goes through the counting proxy in front of the emulator. A pair runs
// every side once, the side that goes first rotating from round to round; a *_jobs_per_s figure
// is a side's median, e2e_vs_raw and e2e_vs_same_work the medians of the rounds' ratios with
// their spread. The calls per job are counted by API over all rounds: the email queue's SQS
// calls and every DynamoDB call for the stack (the idle pollers of the other queues are left
// out), the raw queue's calls (and the same work's DynamoDB calls) for the loops.
//
//	e2e_jobs_per_s, e2e_raw_jobs_per_s   jobs per second, enqueue to delete
//	e2e_same_work_jobs_per_s             the same work's jobs per second
//	e2e_vs_same_work, _spread            stack / same work (target ≥ 0.8): the kit's own overhead
//	e2e_vs_raw, e2e_vs_raw_spread        stack / raw (information: the writes are the emulator's)
//	e2e_calls_per_job, e2e_raw_calls_per_job, e2e_same_work_calls_per_job   all calls per job
//	e2e_calls_per_job_<API>, …_<API>     per API ("SQS.ReceiveMessage"...)
//	e2e_jobs_per_invocation          the email mapping's batch size in practice
//	e2e_invocation_ms_p50, _p90      an invocation's time, event to response (the local runtime)
//	e2e_item_write_ms, e2e_item_write_batched_ms, e2e_item_write_batched_vs_single
//	                                 a DynamoDB write alone and batched (see itemWrites)
//	e2e_ms_per_job, e2e_raw_ms_per_job  1000 / the sides' jobs per second
//	e2e_batching_saves_ms_per_job    the stack's writes a job times what batching saves a write
//	e2e_vs_raw_if_batched            the ratio with that saved (an estimate: the emulator's time only)
//	e2e_jobs, e2e_pairs
func init() {
	register("e2e", 58, benchE2E)
}

const (
	e2eJobs    = 1000
	e2eRounds  = 6 // every order of the three sides once (rotate)
	e2eTimeout = 5 * time.Minute
)

func benchE2E(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join("cdk.out", "manifest.json")); err != nil {
		return fmt.Errorf("e2e: no cloud assembly in cdk.out (run make synth): %w", err)
	}
	var batches e2eBatches
	watch := newLatencyWatch()
	stack, err := chaos.StartStack(ctx, chaos.StackConfig{
		AWS: cfg, CDKOut: "cdk.out", BuildDir: filepath.Join(".run", "bench", "functions"),
		OnBatch: batches.add, Output: watch,
		// The measure is the plain idempotent job against loops: the email function (its
		// instrumented build, which reads the switches) runs without its rate limit and job
		// states and with the sample's own mailer (plainEmail). Without faults in a job's args it
		// runs the sample's EmailWorker behind the same middleware; the faults make the latency
		// part's failing first attempts.
		Instrumented: true, Customize: plainEmail,
	})
	if err != nil {
		return err
	}
	defer func() { _ = stack.Close(context.WithoutCancel(ctx)) }()
	s, err := newE2ESides(ctx, stack)
	if err != nil {
		return err
	}
	defer s.close()
	s.watch = watch

	var stackCalls, rawCalls, sameCalls callCount
	rates, err := rotate(e2eRounds, func(int) (float64, error) {
		rate, calls, err := s.stackRound(ctx)
		stackCalls.add(calls)
		return rate, err
	}, func(int) (float64, error) {
		rate, calls, err := s.rawRound(ctx, false)
		rawCalls.add(calls)
		return rate, err
	}, func(int) (float64, error) {
		rate, calls, err := s.rawRound(ctx, true)
		sameCalls.add(calls)
		return rate, err
	})
	if err != nil {
		return err
	}
	stackRates, rawRates, sameRates := rates[0], rates[1], rates[2]
	emit("e2e_jobs", e2eJobs)
	emit("e2e_pairs", e2eRounds)
	emit("e2e_jobs_per_s", median(stackRates))
	emit("e2e_raw_jobs_per_s", median(rawRates))
	emit("e2e_same_work_jobs_per_s", median(sameRates))
	emitRatio(emit, "e2e_vs_same_work", stackRates, sameRates)
	emitRatio(emit, "e2e_vs_raw", stackRates, rawRates)
	batches.emit(emit, s.emailQueue)
	stackCalls.emit(emit, "e2e_calls_per_job", e2eJobs*e2eRounds)
	rawCalls.emit(emit, "e2e_raw_calls_per_job", e2eJobs*e2eRounds)
	sameCalls.emit(emit, "e2e_same_work_calls_per_job", e2eJobs*e2eRounds)
	single, batched, err := itemWrites(ctx, stack.Proxied, emit)
	if err != nil {
		return err
	}
	// What batching the writes would leave: each of the stack's DynamoDB writes a job (a claim
	// and a completion) costing the batched price instead of its own.
	stackMs, rawMs := 1000/median(stackRates), 1000/median(rawRates)
	writes := stackCalls.perJob("DynamoDB.PutItem", e2eJobs*e2eRounds) + stackCalls.perJob("DynamoDB.UpdateItem", e2eJobs*e2eRounds)
	save := writes * (single - batched)
	emit("e2e_ms_per_job", stackMs)
	emit("e2e_raw_ms_per_job", rawMs)
	emit("e2e_batching_saves_ms_per_job", save)
	emit("e2e_vs_raw_if_batched", rawMs/(stackMs-save))
	return s.latency(ctx, emit)
}

// e2eSides is what both sides run on: the stack's producer and email queue, and the raw loop's
// queue and client (through the same counting proxy).
type e2eSides struct {
	stack      *chaos.Stack
	producer   *jobs.Client
	emailQueue string
	pollers    int
	raw        *sqs.Client
	rawQueue   string
	db         *dynamodb.Client // the same work's writes, through the proxy
	table      string           // the stack's idempotency table
	watch      *latencyWatch    // the runtime's events in the functions' output
	round      int
}

func newE2ESides(ctx context.Context, stack *chaos.Stack) (*e2eSides, error) {
	producer, err := stack.Producer()
	if err != nil {
		return nil, err
	}
	s := &e2eSides{stack: stack, producer: producer, emailQueue: stack.QueueURL(samplejobs.KindSendEmail)}
	for _, m := range stack.Deployment.Mappings {
		if m.QueueURL == s.emailQueue {
			s.pollers = max(m.MaximumConcurrency, 2)
		}
	}
	if s.pollers == 0 {
		return nil, errors.New("e2e: no event source mapping feeds the email queue")
	}
	s.raw = sqs.NewFromConfig(stack.Proxied)
	s.db = dynamodb.NewFromConfig(stack.Proxied)
	if s.table = stack.WorkerEnv(samplejobs.KindSendEmail)[contract.EnvIdempotencyTable]; s.table == "" {
		return nil, errors.New("e2e: the email function has no idempotency table")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	q, err := s.raw.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("e2e-raw-" + hex.EncodeToString(b[:])),
		Attributes: map[string]string{"VisibilityTimeout": "30"},
	})
	if err != nil {
		return nil, err
	}
	s.rawQueue = aws.ToString(q.QueueUrl)
	return s, nil
}

func (s *e2eSides) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = s.raw.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(s.rawQueue)})
}

// stackRound enqueues e2eJobs email jobs and waits until the email mapping has deleted them.
func (s *e2eSides) stackRound(ctx context.Context) (float64, callCount, error) {
	s.round++
	deleted := func() int64 {
		var n int64
		for _, m := range s.stack.Dev().Stats() {
			if m.QueueURL == s.emailQueue {
				n += m.Deleted
			}
		}
		return n
	}
	base := deleted()
	s.stack.Proxy.ResetStats()
	start := time.Now()
	batch := make([]jobs.BatchJob, 0, 1000)
	for i := range e2eJobs {
		to := fmt.Sprintf("e2e%d-%05d@example.com", s.round, i)
		batch = append(batch, jobs.BatchJob{Args: samplejobs.SendEmail{To: to, Subject: "e2e"}})
		if len(batch) == cap(batch) || i == e2eJobs-1 {
			if _, err := s.producer.EnqueueBatch(ctx, batch); err != nil {
				return 0, callCount{}, fmt.Errorf("e2e: enqueue: %w", err)
			}
			batch = batch[:0]
		}
	}
	for deleted()-base < e2eJobs {
		if time.Since(start) > e2eTimeout {
			return 0, callCount{}, fmt.Errorf("e2e: only %d of %d jobs done after %s", deleted()-base, e2eJobs, e2eTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	st := s.stack.Proxy.Stats()
	calls := callCount{}
	calls.addStats(st.Queues[queueNameOf(s.emailQueue)], "SQS.")
	calls.addStats(st, "DynamoDB.")
	return e2eJobs / elapsed.Seconds(), calls, nil
}

// rawRound sends e2eJobs messages and has s.pollers pollers receive and delete them, doing a
// job's two idempotency writes for each message first when work is set.
func (s *e2eSides) rawRound(ctx context.Context, work bool) (float64, callCount, error) {
	s.stack.Proxy.ResetStats()
	ctx, cancel := context.WithTimeout(ctx, e2eTimeout)
	defer cancel()
	start := time.Now()
	var left atomic.Int64
	left.Store(e2eJobs)
	errs := make(chan error, s.pollers+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		errs <- s.rawSend(ctx)
	})
	for range s.pollers {
		wg.Go(func() {
			errs <- s.rawPoll(ctx, &left, work)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, callCount{}, fmt.Errorf("e2e raw: %w", err)
		}
	}
	st := s.stack.Proxy.Stats()
	calls := callCount{}
	calls.addStats(st.Queues[queueNameOf(s.rawQueue)], "SQS.")
	if work {
		calls.addStats(st, "DynamoDB.")
	}
	return e2eJobs / elapsed.Seconds(), calls, nil
}

// rawSend sends e2eJobs small bodies in SendMessageBatch calls of 10, four at once.
func (s *e2eSides) rawSend(ctx context.Context) error {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for i := 0; i < e2eJobs; i += jobs.MaxBatchEntries {
		entries := make([]sqstypes.SendMessageBatchRequestEntry, 0, jobs.MaxBatchEntries)
		for j := i; j < min(i+jobs.MaxBatchEntries, e2eJobs); j++ {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j - i)), MessageBody: aws.String(`{"to":"raw` + strconv.Itoa(j) + `@example.com"}`),
			})
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := s.raw.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.rawQueue), Entries: entries})
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("send: %d entries failed", len(out.Failed))
			}
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}

// rawPoll receives up to 10 messages at a time and deletes them in one call, until left (the
// messages not yet deleted, over all pollers) reaches 0. With work, each message's claim and
// completion are written first, the messages of a receive at once.
func (s *e2eSides) rawPoll(ctx context.Context, left *atomic.Int64, work bool) error {
	for left.Load() > 0 {
		out, err := s.raw.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.rawQueue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			continue
		}
		if work {
			if err := s.sameWork(ctx, out.Messages); err != nil {
				return err
			}
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		del, err := s.raw.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.rawQueue), Entries: entries})
		if err != nil {
			return err
		}
		if len(del.Failed) > 0 {
			return fmt.Errorf("delete: %d entries failed", len(del.Failed))
		}
		left.Add(-int64(len(entries)))
	}
	return nil
}

// sameWork writes, for each message at once, what a jobkit job writes to run once: its claim (a
// PutItem on the condition that no live record holds the key) and its completion (an UpdateItem
// on the condition that the claim still holds), by hand.
func (s *e2eSides) sameWork(ctx context.Context, msgs []sqstypes.Message) error {
	errs := make(chan error, len(msgs))
	for _, m := range msgs {
		go func() { errs <- s.claimAndComplete(ctx, "e2e-same#"+aws.ToString(m.MessageId)) }()
	}
	var first error
	for range msgs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *e2eSides) claimAndComplete(ctx context.Context, key string) error {
	now := time.Now()
	lease := strconv.FormatInt(now.Add(30*time.Second).UnixMilli(), 10)
	expires := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	id := &ddbtypes.AttributeValueMemberS{Value: key}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]ddbtypes.AttributeValue{
			idempotency.AttrID: id, idempotency.AttrStatus: &ddbtypes.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)},
			idempotency.AttrExpiration:           &ddbtypes.AttributeValueMemberN{Value: expires},
			idempotency.AttrInProgressExpiration: &ddbtypes.AttributeValueMemberN{Value: lease},
		},
		ConditionExpression: aws.String("attribute_not_exists(#id) OR #exp <= :now OR (#st = :run AND #lease <= :nowms)"),
		ExpressionAttributeNames: map[string]string{"#id": idempotency.AttrID, "#exp": idempotency.AttrExpiration,
			"#st": idempotency.AttrStatus, "#lease": idempotency.AttrInProgressExpiration},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":now":   &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
			":nowms": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			":run":   &ddbtypes.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)},
		},
	})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 map[string]ddbtypes.AttributeValue{idempotency.AttrID: id},
		UpdateExpression:    aws.String("SET #st = :done, #fin = :fin"),
		ConditionExpression: aws.String("#st = :run AND #lease = :lease"),
		ExpressionAttributeNames: map[string]string{"#st": idempotency.AttrStatus, "#fin": idempotency.AttrFinishedAt,
			"#lease": idempotency.AttrInProgressExpiration},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":done":  &ddbtypes.AttributeValueMemberS{Value: string(idempotency.StatusCompleted)},
			":run":   &ddbtypes.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)},
			":fin":   &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
			":lease": &ddbtypes.AttributeValueMemberN{Value: lease},
		},
	})
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	return nil
}

// callCount counts forwarded calls by API.
type callCount map[string]int64

func (c *callCount) add(o callCount) {
	if *c == nil {
		*c = callCount{}
	}
	for k, v := range o {
		(*c)[k] += v
	}
}

// addStats adds the forwarded calls of st's APIs whose names start with prefix.
func (c callCount) addStats(st faultproxy.Stats, prefix string) {
	for name, a := range st.APIs {
		if strings.HasPrefix(name, prefix) && a.Forwarded > 0 {
			c[name] += a.Forwarded
		}
	}
}

// perJob is the calls of api per job.
func (c callCount) perJob(api string, jobs int) float64 { return float64(c[api]) / float64(jobs) }

// emit prints the total calls per job as key and each API's as key_<API>.
func (c callCount) emit(emit func(string, any), key string, jobs int) {
	names := make([]string, 0, len(c))
	var total int64
	for name, n := range c {
		names = append(names, name)
		total += n
	}
	sort.Strings(names)
	emit(key, float64(total)/float64(jobs))
	for _, name := range names {
		emit(key+"_"+name, float64(c[name])/float64(jobs))
	}
}

// queueNameOf is the name in a queue URL, as the proxy keys its per-queue counters.
func queueNameOf(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// e2eBatches keeps the size and duration of every email batch the mapping invoked.
type e2eBatches struct {
	mu    sync.Mutex
	queue []string
	sizes []int
	durs  []time.Duration
}

func (b *e2eBatches) add(_ string, rep esm.BatchReport) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, rep.QueueURL)
	b.sizes = append(b.sizes, len(rep.MessageIDs))
	b.durs = append(b.durs, rep.Duration)
}

// emit prints the figures of queue's batches.
func (b *e2eBatches) emit(emit func(string, any), queue string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var jobs int
	var ms []float64
	for i, q := range b.queue {
		if q == queue {
			jobs += b.sizes[i]
			ms = append(ms, float64(b.durs[i].Microseconds())/1000)
		}
	}
	if len(ms) == 0 {
		return
	}
	sort.Float64s(ms)
	emit("e2e_jobs_per_invocation", float64(jobs)/float64(len(ms)))
	emit("e2e_invocation_ms_p50", ms[len(ms)/2])
	emit("e2e_invocation_ms_p90", ms[len(ms)*9/10])
}
