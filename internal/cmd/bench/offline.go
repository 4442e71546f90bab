package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The offline stack's own costs: a function's cold start and warm invoke through the local Lambda
// Runtime API, and how fast the event source mapping drains a queue into a function that does nothing.
func init() {
	register("offline-runtime", 80, benchOfflineRuntime)
	register("offline-esm", 81, benchOfflineESM)
}

func buildOfflineFunction(ctx context.Context, pkg string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "bench-fn-")
	if err != nil {
		return "", nil, err
	}
	out := filepath.Join(dir, "bootstrap")
	if err := lambdaruntime.Build(ctx, pkg, out); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return out, func() { os.RemoveAll(dir) }, nil
}

func benchOfflineRuntime(ctx context.Context, emit func(string, any)) error {
	bootstrap, cleanup, err := buildOfflineFunction(ctx, "offline/lambdaruntime/testdata/probe")
	if err != nil {
		return err
	}
	defer cleanup()
	rt, err := lambdaruntime.New(lambdaruntime.Function{Name: "bench-probe", Bootstrap: bootstrap, Timeout: 10 * time.Second}, &lambdaruntime.Options{Output: os.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	event := []byte(`{"action":"count"}`)
	start := time.Now()
	res, err := rt.Invoke(ctx, event)
	if err != nil || res.Outcome != lambdaruntime.Success {
		return fmt.Errorf("cold invoke: %v %v", err, res.Error)
	}
	emit("offline.runtime.cold_invoke_ms", float64(time.Since(start).Microseconds())/1000)
	emit("offline.runtime.init_ms", float64(res.InitDuration.Microseconds())/1000)
	const n = 500
	lat := make([]time.Duration, n)
	all := time.Now()
	for i := range lat {
		t := time.Now()
		res, err := rt.Invoke(ctx, event)
		if err != nil || res.Outcome != lambdaruntime.Success {
			return fmt.Errorf("warm invoke: %v %v", err, res.Error)
		}
		lat[i] = time.Since(t)
	}
	elapsed := time.Since(all)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	emit("offline.runtime.warm_invoke_p50_us", float64(lat[n/2].Microseconds()))
	emit("offline.runtime.warm_invoke_p99_us", float64(lat[n*99/100].Microseconds()))
	emit("offline.runtime.warm_invokes_per_s", float64(n)/elapsed.Seconds())
	return nil
}

func benchOfflineESM(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	bootstrap, cleanup, err := buildOfflineFunction(ctx, "offline/esm/testdata/rbi")
	if err != nil {
		return err
	}
	defer cleanup()
	name := "bench-esm-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "60"}})
	if err != nil {
		return err
	}
	url := aws.ToString(q.QueueUrl)
	defer client.DeleteQueue(context.WithoutCancel(ctx), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return err
	}
	const n = 600
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String("ok-" + strconv.Itoa(i+j))})
		}
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			return err
		}
	}
	rt, err := lambdaruntime.New(lambdaruntime.Function{Name: "bench-rbi", Bootstrap: bootstrap, Timeout: 30 * time.Second, MaxInstances: 5}, &lambdaruntime.Options{Output: os.Stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	done := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	p, err := esm.New(client, rt, esm.Mapping{
		QueueURL: url, QueueARN: attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)],
		BatchSize: 10, MaximumConcurrency: 5, ReportBatchItemFailures: true,
	}, nil)
	if err != nil {
		return err
	}
	start := time.Now()
	go func() {
		defer close(done)
		_ = p.Run(runCtx)
	}()
	for p.Stats().Deleted < n {
		if time.Since(start) > 5*time.Minute {
			return fmt.Errorf("only %d of %d messages deleted", p.Stats().Deleted, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stop()
	<-done
	s := p.Stats()
	emit("offline.esm.messages_per_s", float64(n)/elapsed.Seconds())
	emit("offline.esm.messages_per_invocation", float64(s.Received)/float64(s.Invocations))
	return nil
}
