package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

// Middleware runs each job once per idempotency key. In a worker function:
//
//	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), os.Getenv(contract.EnvIdempotencyTable))
//	workers.Use(idempotency.Middleware(store, nil))
func ExampleMiddleware() {
	store := idempotency.NewMemoryStore()
	sent := 0
	handler := idempotency.Middleware(store, nil)(func(ctx context.Context, row *jobs.JobRow) error {
		sent++
		return nil
	})

	row := &jobs.JobRow{ID: "01JD3", Kind: "email.send", EncodedArgs: json.RawMessage(`{"to":"ada@example.com"}`)}
	fmt.Println(handler(context.Background(), row)) // first delivery: runs
	fmt.Println(handler(context.Background(), row)) // SQS delivers it again: skipped, success
	fmt.Println("sent:", sent)

	// The same key with other args: cancelled, so the runtime dead-letters it.
	changed := &jobs.JobRow{ID: "01JD3", Kind: "email.send", EncodedArgs: json.RawMessage(`{"to":"bob@example.com"}`)}
	fmt.Println(handler(context.Background(), changed) != nil)
	// Output:
	// <nil>
	// <nil>
	// sent: 1
	// true
}
