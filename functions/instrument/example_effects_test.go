package instrument_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

// With EFFECTS_TABLE set (a fault-injection run sets it), the instrumented email function counts
// each send in the same transaction as the job's idempotency record; ReadEffects then tells, per
// job id, how many times its effect was applied.
func ExampleEffects_Middleware() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	db := dynamodb.NewFromConfig(awsCfg)
	effects := instrument.EffectsFromEnv(db) // nil when EFFECTS_TABLE is unset: nothing recorded

	workers := jobs.NewWorkers()
	workers.Use(idempotency.Middleware(idempotency.NewDynamoDBStore(db, "idempotency-table"), nil),
		instrument.FaultMiddleware(), effects.Middleware())
	jobs.AddWorker(workers, &samplejobs.EmailWorker{Mailer: samplejobs.LogMailer{}})

	if effects != nil {
		counts, err := instrument.ReadEffects(ctx, db, effects.Table)
		if err != nil {
			panic(err)
		}
		for id, c := range counts {
			if c.Applied > 1 {
				fmt.Println("applied more than once:", id)
			}
		}
	}
}
