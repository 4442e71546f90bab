package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
)

// SyncContacts calls a partner's API, which allows 10 requests a second per account.
type SyncContacts struct {
	Account string `json:"account"`
}

func (SyncContacts) Kind() string { return "crm.sync_contacts" }

// A worker's main: jobs of crm.sync_contacts take a token from their account's bucket before
// they run; without one they are snoozed, not failed, and not charged an attempt.
func ExampleMiddleware() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		panic(err)
	}
	db := dynamodb.NewFromConfig(awsCfg)
	table := os.Getenv(contract.EnvIdempotencyTable) // jobkit's state table
	state := idempotency.NewDynamoDBStore(db, table)
	cfg.Deliveries = state // a snooze for a token is not an attempt

	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[SyncContacts](func(ctx context.Context, j *jobs.Job[SyncContacts]) error {
		return nil // call the partner's API for j.Args.Account
	}))
	workers.Use(
		ratelimit.Middleware(ratelimit.NewStore(db, table), ratelimit.Rules{
			"crm.sync_contacts": {
				Name:  "partner-api",
				Limit: ratelimit.PerSecond(10),
				Key:   ratelimit.KeyFromArgs(func(a SyncContacts) string { return a.Account }),
			},
		}, nil),
		idempotency.Middleware(state, nil),
	)
	lambda.Start(jobs.NewLambdaHandler(workers, cfg))
}

// A limit is kept by one bucket item up to ShardRate tokens a second, and split above it.
func ExampleLimit_Shards() {
	for _, l := range []ratelimit.Limit{ratelimit.PerSecond(10), ratelimit.PerMinute(6000), ratelimit.PerSecond(1000)} {
		fmt.Printf("%d per %s: %d item(s), %s\n", l.N, l.Per, l.Shards(), ratelimit.BucketID("partner-api", "acct-1"))
	}
	fmt.Println(ratelimit.Limit{N: 5, Per: time.Second, Burst: 0}.Validate())
	// Output:
	// 10 per 1s: 1 item(s), rate#partner-api#acct-1
	// 6000 per 1m0s: 1 item(s), rate#partner-api#acct-1
	// 1000 per 1s: 3 item(s), rate#partner-api#acct-1
	// <nil>
}
