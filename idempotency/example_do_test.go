package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobkit-go/jobkit/idempotency"
)

// Do runs a function once per key; a duplicate gets the recorded result.
func ExampleDo() {
	ctx := context.Background()
	store := idempotency.NewMemoryStore() // idempotency.NewDynamoDBStore(client, table) in production

	type Charge struct {
		ID     string `json:"id"`
		Amount int    `json:"amount"`
	}
	charges := 0
	charge := func(ctx context.Context) (Charge, error) {
		charges++
		return Charge{ID: "ch_1", Amount: 1200}, nil
	}
	cfg := &idempotency.Config{Payload: map[string]any{"order": "o-42", "amount": 1200}}

	first, err := idempotency.Do(ctx, store, "order-o-42", charge, cfg)
	fmt.Println(first, err)
	again, err := idempotency.Do(ctx, store, "order-o-42", charge, cfg)
	fmt.Println(again, err)
	fmt.Println("charges:", charges)

	// The same key with another payload is refused.
	_, err = idempotency.Do(ctx, store, "order-o-42", charge, &idempotency.Config{Payload: map[string]any{"order": "o-42", "amount": 9900}})
	var mismatch *idempotency.PayloadMismatchError
	fmt.Println(errors.As(err, &mismatch))
	// Output:
	// {ch_1 1200} <nil>
	// {ch_1 1200} <nil>
	// charges: 1
	// true
}

// A call while another run holds the key gets an *InProgressError saying when to retry.
func ExampleInProgressError() {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	_, _ = idempotency.Do(ctx, store, "report-2026-11", func(ctx context.Context) (string, error) {
		// A second request for the same report arrives while the first is being built.
		_, err := idempotency.Do(ctx, store, "report-2026-11", func(ctx context.Context) (string, error) {
			return "", nil
		}, nil)
		var inProgress *idempotency.InProgressError
		if errors.As(err, &inProgress) {
			fmt.Println("in progress; retry after the lease ends")
		}
		return "report.pdf", nil
	}, nil)
	// Output:
	// in progress; retry after the lease ends
}
