package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The job state benchmark counts the DynamoDB write units a job costs from enqueue to success,
// without job states (idempotency only) and with them (folded into the idempotency records, and
// without idempotency), and what a batch member costs. Write units are counted from the requests
// as DynamoDB bills them for items under 1 KB: 1 per PutItem, UpdateItem, DeleteItem and
// BatchWriteItem entry, 2 per item of a TransactWriteItems; plus the write units of the state
// table's list index (indexUnits: 1 when an item enters or leaves the index, 2 when it moves).
func init() {
	register("jobstate", 25, benchJobState)
}

// jobStateJobs is how many jobs each setup runs.
const jobStateJobs = 20

type benchThumb struct {
	N int `json:"n"`
}

func (benchThumb) Kind() string { return "bench.thumb" }

type benchAlbum struct{ state.BatchResult }

func (benchAlbum) Kind() string { return "bench.album" }

// unitCounter counts write and read units of the requests a DynamoDB client makes.
type unitCounter struct{ writes, reads atomic.Int64 }

func (u *unitCounter) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("benchCountUnits",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
					u.writes.Add(1)
				case *dynamodb.BatchWriteItemInput:
					for _, reqs := range p.RequestItems {
						u.writes.Add(int64(len(reqs)))
					}
				case *dynamodb.TransactWriteItemsInput:
					u.writes.Add(2 * int64(len(p.TransactItems)))
				case *dynamodb.GetItemInput:
					u.reads.Add(1)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

func benchJobState(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	var units unitCounter
	index := newIndexUnits()
	db := dynamodb.NewFromConfig(cfg, units.option, index.option)
	written := func() float64 { return float64(units.writes.Load()) + index.total() }
	table, drop, err := createBenchTable(ctx, db)
	if err != nil {
		return err
	}
	defer drop()
	sqsClient := sqs.NewFromConfig(cfg)
	st, err := state.New(db, table, &state.Options{SQS: sqsClient, Shards: 4})
	if err != nil {
		return err
	}
	store := idempotency.NewDynamoDBStore(db, table)
	setups := []struct {
		name   string
		states bool
		mw     []jobs.Middleware
	}{
		{"idempotency_only", false, []jobs.Middleware{idempotency.Middleware(store, nil)}},
		{"states_folded", true, []jobs.Middleware{st.Middleware(&state.MiddlewareOptions{Folded: true}),
			idempotency.Middleware(store, &idempotency.Config{RecordJobs: true})}},
		{"none", false, nil},
		{"states_no_idempotency", true, []jobs.Middleware{st.Middleware(nil)}},
	}
	perJob := map[string]float64{}
	for _, s := range setups {
		var stateStore jobs.StateStore
		if s.states {
			stateStore = st
		}
		r, err := newStateRig(ctx, sqsClient, s.name, stateStore, s.mw)
		if err != nil {
			return err
		}
		before := written()
		if err := r.run(ctx, jobStateJobs, nil); err != nil {
			r.drop()
			return fmt.Errorf("%s: %w", s.name, err)
		}
		r.drop()
		perJob[s.name] = (written() - before) / jobStateJobs
		emit("jobstate_write_units_per_job_"+s.name, perJob[s.name])
	}
	emit("jobstate_extra_write_units_per_job", perJob["states_folded"]-perJob["idempotency_only"])
	emit("jobstate_extra_write_units_per_job_without_idempotency", perJob["states_no_idempotency"]-perJob["none"])

	// A batch of jobStateJobs members, closed before they run.
	r, err := newStateRig(ctx, sqsClient, "batch", st, setups[1].mw)
	if err != nil {
		return err
	}
	defer r.drop()
	before, readsBefore := written(), units.reads.Load()
	if err := r.run(ctx, jobStateJobs, st); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	emit("jobstate_batch_write_units_per_member", (written()-before)/jobStateJobs)
	emit("jobstate_batch_read_units_per_member", float64(units.reads.Load()-readsBefore)/jobStateJobs)
	emit("jobstate_batch_callbacks", r.callbacks.Load())
	if r.callbacks.Load() != 1 {
		return fmt.Errorf("batch: %d callbacks, want 1", r.callbacks.Load())
	}
	return nil
}

// stateRig is a queue, a producer and a worker runtime for the job state benchmark.
type stateRig struct {
	sqs       *sqs.Client
	url, arn  string
	client    *jobs.Client
	handle    func(context.Context, []sqstypes.Message) error
	callbacks atomic.Int64
	drop      func()
}

func newStateRig(ctx context.Context, sqsClient *sqs.Client, name string, st jobs.StateStore, mw []jobs.Middleware) (*stateRig, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	out, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jk-bench-state-" + name + "-" + hex.EncodeToString(b[:]))})
	if err != nil {
		return nil, err
	}
	r := &stateRig{sqs: sqsClient, url: aws.ToString(out.QueueUrl)}
	r.drop = func() {
		_, _ = sqsClient.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	}
	attrs, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, err
	}
	r.arn = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if r.client, err = jobs.NewClient(sqsClient, jobs.ClientOptions{DefaultQueueURL: r.url, State: st}); err != nil {
		return nil, err
	}
	workers := jobs.NewWorkers()
	workers.Use(mw...)
	jobs.AddWorker(workers, jobs.WorkFunc[benchThumb](func(ctx context.Context, job *jobs.Job[benchThumb]) error {
		if st != nil {
			return jobs.SetResult(ctx, job.Args.N)
		}
		return nil
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[benchAlbum](func(context.Context, *jobs.Job[benchAlbum]) error {
		r.callbacks.Add(1)
		return nil
	}))
	h := jobs.NewLambdaHandler(workers, jobs.Config{
		QueueURL: r.url, DLQURL: r.url, SQS: sqsClient, States: st,
		Metrics: io.Discard, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}).HandleSQS
	r.handle = func(ctx context.Context, msgs []sqstypes.Message) error {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := h(lctx, jobstest.EventFromMessages(r.arn, msgs))
		if err == nil && len(resp.BatchItemFailures) > 0 {
			err = fmt.Errorf("%d jobs failed", len(resp.BatchItemFailures))
		}
		return err
	}
	return r, nil
}

// run enqueues n jobs (as a batch of table, if set) and runs every message of the queue.
func (r *stateRig) run(ctx context.Context, n int, table *state.Table) error {
	list := make([]jobs.BatchJob, n)
	for i := range list {
		list[i] = jobs.BatchJob{Args: benchThumb{N: i}}
	}
	if table != nil {
		b, err := table.OpenBatch(ctx, r.client, state.BatchOpts{Callback: benchAlbum{}})
		if err != nil {
			return err
		}
		if _, err := b.Add(ctx, list); err != nil {
			return err
		}
		if err := b.Close(ctx); err != nil {
			return err
		}
	} else if _, err := r.client.EnqueueBatch(ctx, list); err != nil {
		return err
	}
	_, err := runQueue(ctx, r.sqs, r.url, r.handle)
	return err
}
