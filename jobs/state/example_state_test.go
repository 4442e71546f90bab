package state_test

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

type Thumbnail struct {
	Photo string `json:"photo"`
}

func (Thumbnail) Kind() string { return "photo.thumbnail" }

// AlbumReady is the callback of a batch: it embeds state.BatchResult to learn the counts.
type AlbumReady struct {
	state.BatchResult
	Album string `json:"album"`
}

func (AlbumReady) Kind() string { return "album.ready" }

// A worker function keeps job states: running and succeeded in the idempotency records (no extra
// write), retries and dead letters through Config.States, batch members counted by Middleware.
func ExampleTable_Middleware() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	db, sqsClient := dynamodb.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg)
	tableName := os.Getenv(contract.EnvStateTable) // the IdempotencyTable construct's table
	table, err := state.New(db, tableName, &state.Options{SQS: sqsClient})
	if err != nil {
		panic(err)
	}
	workers := jobs.NewWorkers()
	workers.Use(
		table.Middleware(&state.MiddlewareOptions{Folded: true}),
		idempotency.Middleware(idempotency.NewDynamoDBStore(db, tableName), &idempotency.Config{RecordJobs: true}),
	)
	jobs.AddWorker(workers, jobs.WorkFunc[Thumbnail](func(ctx context.Context, job *jobs.Job[Thumbnail]) error {
		// ... make the thumbnail, then say where it is: Client.Status shows it.
		return jobs.SetResult(ctx, map[string]string{"key": "thumbs/" + job.Args.Photo})
	}))
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		panic(err)
	}
	cfg.SQS, cfg.States = sqsClient, table
	_ = jobs.NewLambdaHandler(workers, cfg).HandleSQS // lambda.Start(...)
}

// Fan out: enqueue N jobs as one batch; AlbumReady is enqueued once when every member has
// succeeded or died.
func ExampleTable_OpenBatch() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	table, err := state.New(dynamodb.NewFromConfig(awsCfg), os.Getenv("STATE_TABLE"), nil)
	if err != nil {
		panic(err)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(awsCfg), jobs.ClientOptions{
		DefaultQueueURL: os.Getenv("PHOTOS_QUEUE_URL"), State: table,
	})
	if err != nil {
		panic(err)
	}
	batch, err := table.OpenBatch(ctx, client, state.BatchOpts{Callback: AlbumReady{Album: "summer"}})
	if err != nil {
		panic(err)
	}
	var members []jobs.BatchJob
	for _, p := range []string{"a.jpg", "b.jpg", "c.jpg"} {
		members = append(members, jobs.BatchJob{Args: Thumbnail{Photo: p}})
	}
	if _, err := batch.Add(ctx, members); err != nil { // Add again while the batch is open
		panic(err)
	}
	if err := batch.Close(ctx); err != nil { // no more members: the callback may now run
		panic(err)
	}
	info, err := table.BatchStatus(ctx, batch.ID) // or: jobkit batch show ID
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Total, info.Pending, info.Succeeded, info.Dead)
}
