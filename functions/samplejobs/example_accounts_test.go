package samplejobs_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// A service opens an account and, in the same transaction, writes the welcome email job to the
// outbox in jobkit's state table: the outbox forwarder (cmd/jobkit-outbox) sends it once the
// transaction has committed. Opening the account again writes nothing and sends nothing.
func ExampleOpenAccount() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{Queues: map[string]string{
		samplejobs.KindSendEmail: os.Getenv("EMAIL_QUEUE_URL"), // output JobkitQueueEmail
	}})
	if err != nil {
		panic(err)
	}
	ob, err := outbox.New(outbox.Config{Table: os.Getenv("STATE_TABLE"), Client: client}) // output JobkitStateTable
	if err != nil {
		panic(err)
	}
	id, err := samplejobs.OpenAccount(ctx, ob, dynamodb.NewFromConfig(cfg), os.Getenv("LEDGER_TABLE"), "acct-42", "ada@example.com")
	var exists *samplejobs.AccountExistsError
	switch {
	case errors.As(err, &exists):
		fmt.Println("already open: no second welcome")
	case err != nil:
		panic(err) // nothing was written
	default:
		fmt.Println("welcome email", id, "is in the outbox")
	}
}
