package jobs_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

type RebuildIndex struct {
	UserID string `json:"user_id"`
}

func (RebuildIndex) Kind() string { return "search.rebuild_index" }

// Status answers "what happened to job X" from the job state table (jobs/state.Table on AWS;
// the in-memory jobstest.StateStore here).
func ExampleClient_Status() {
	ctx := context.Background()
	client, _ := jobs.NewClient(jobstest.NewRecorder(), jobs.ClientOptions{
		DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/search",
		State:           jobstest.NewStateStore(), // on AWS: state.New(dynamodb.NewFromConfig(cfg), table, nil)
	})
	res, _ := client.Enqueue(ctx, RebuildIndex{UserID: "u-42"}, &jobs.EnqueueOpts{ID: "01JD3X0Q6S7V9M2D1YB4KQ7E5N"})
	st, _ := client.Status(ctx, res.ID)
	fmt.Println(st.ID, st.Kind, st.State)
	// Output:
	// 01JD3X0Q6S7V9M2D1YB4KQ7E5N search.rebuild_index enqueued
}

// Unique jobs: a second enqueue with the same key inside the window sends nothing and returns the
// first job's id.
func ExampleUniqueOpts() {
	ctx := context.Background()
	sqsClient := jobstest.NewRecorder()
	client, _ := jobs.NewClient(sqsClient, jobs.ClientOptions{
		DefaultQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/search",
		State:           jobstest.NewStateStore(),
	})
	unique := &jobs.UniqueOpts{Key: "u-42", Window: 10 * time.Minute}
	first, _ := client.Enqueue(ctx, RebuildIndex{UserID: "u-42"}, &jobs.EnqueueOpts{Unique: unique})
	again, _ := client.Enqueue(ctx, RebuildIndex{UserID: "u-42"}, &jobs.EnqueueOpts{Unique: unique})
	fmt.Println(first.Duplicate, again.Duplicate, again.ID == first.ID, len(sqsClient.Sent()))
	// Output:
	// false true true 1
}
