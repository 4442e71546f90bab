// Command ledger is the sample stack's ledger worker: it runs PostLedger jobs from the FIFO Ledger
// queue, in order per account, each posting applied exactly once (in one DynamoDB transaction
// with its idempotency record, which holds its key for JOBKIT_IDEMPOTENCY_EXPIRY: the queue's and
// DLQ's retention under the Worker construct).
package main

import (
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"
)

func main() {
	m := setup.FromEnv("ledger")
	jobs.AddWorker(m.Workers, &samplejobs.LedgerWorker{Table: m.Env(samplejobs.EnvLedgerTable)})
	m.Start()
}
