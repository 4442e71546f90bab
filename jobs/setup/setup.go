// Package setup wires a worker's main from the environment the Worker and ContainerWorker
// constructs set: the runtime's Config (jobs.ConfigFromEnv), the AWS clients, the idempotency
// store on JOBKIT_IDEMPOTENCY_TABLE as the delivery ledger, and, when JOBKIT_STATE_TABLE is set,
// job states and fan-out batch counts (jobs/state), listed by queue and state when
// JOBKIT_LIST_JOBS is "1". A worker main is then its workers and
// nothing else:
//
//	func main() {
//		m := setup.FromEnv("email")
//		jobs.AddWorker(m.Workers, &EmailWorker{Logger: m.Config.Logger})
//		m.Start()
//	}
//
// FromEnv ends the process with a log line naming what is missing when the environment cannot
// run a worker, as a function that cannot start should (Lambda reports the init error).
package setup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// Main is a worker process being wired: what FromEnv read and built, and the middleware to run
// around the workers. Add workers to Workers and middleware with Use and UseInside, then Start.
type Main struct {
	// Name names the process in its start-up errors ("email: cannot start").
	Name string
	// Config is the runtime's configuration; FromEnv sets Deliveries (the idempotency store) and,
	// with a state table, States.
	Config jobs.Config
	// AWS is the SDK configuration the clients were made from (config.LoadDefaultConfig).
	AWS aws.Config
	// DB is the DynamoDB client of the idempotency store and the state table.
	DB *dynamodb.Client
	// Table is the idempotency table (JOBKIT_IDEMPOTENCY_TABLE), which also holds rate-limit
	// buckets and, with job states, the states.
	Table string
	// Store is the idempotency store on Table.
	Store *idempotency.DynamoDBStore
	// States is the job state table (JOBKIT_STATE_TABLE), nil when the worker keeps no states.
	States *state.Table
	// Workers are the job workers; register them with jobs.AddWorker.
	Workers *jobs.Workers

	outside, inside []jobs.Middleware
}

// FromEnv reads the environment and builds the clients, or ends the process with a log line
// saying what is wrong (see Fail). JOBKIT_IDEMPOTENCY_TABLE is required: a worker without an
// idempotency store runs a redelivered job twice; wire jobs.Start yourself to go without.
func FromEnv(name string) *Main {
	m, err := New(context.Background(), name)
	if err != nil {
		fail(name, err)
	}
	return m
}

// New is FromEnv with its errors returned.
func New(ctx context.Context, name string) (*Main, error) {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	table := os.Getenv(contract.EnvIdempotencyTable)
	if table == "" {
		return nil, errors.New(contract.EnvIdempotencyTable + " is not set")
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	m := &Main{Name: name, Config: cfg, AWS: awsCfg, Table: table, Workers: jobs.NewWorkers()}
	m.DB = dynamodb.NewFromConfig(awsCfg)
	stateTable := os.Getenv(contract.EnvStateTable)
	// With job states, JOBKIT_LIST_JOBS=1 also lists the jobs by queue and state (jobs/state List).
	list := stateTable != "" && os.Getenv(contract.EnvListJobs) == "1"
	m.Store = idempotency.NewDynamoDBStore(m.DB, table, func(o *idempotency.DynamoDBOptions) { o.ListJobs = list })
	m.Config.Deliveries = m.Store // attempts count real runs, not skipped deliveries
	if stateTable != "" {
		// Job states: running and succeeded in the idempotency records, batch members counted;
		// SQS sends a fan-out batch's callback job.
		m.States, err = state.New(m.DB, stateTable, &state.Options{SQS: sqs.NewFromConfig(awsCfg), ListJobs: list})
		if err != nil {
			return nil, err
		}
		m.Config.States = m.States
	}
	return m, nil
}

// Use adds middleware outside the state and idempotency middleware, the first added outermost:
// what must run before a job claims its idempotency key (a rate limit, so that a job waiting for
// a token holds no claim).
func (m *Main) Use(mw ...jobs.Middleware) { m.outside = append(m.outside, mw...) }

// UseInside adds middleware inside the idempotency middleware, next to the job: it runs only for
// a job that holds its claim, at most once per key.
func (m *Main) UseInside(mw ...jobs.Middleware) { m.inside = append(m.inside, mw...) }

// Env returns the environment variable name, or ends the process (see Fail) when it is unset:
// for what a worker's own code needs (its table, its bucket).
func (m *Main) Env(name string) string {
	v := os.Getenv(name)
	if v == "" {
		m.Fail(errors.New(name + " is not set"))
	}
	return v
}

// Fail logs err as the reason the process cannot start and exits with status 1.
func (m *Main) Fail(err error) { fail(m.Name, err) }

// Middleware returns the chain Start runs the workers with: Use's, then job states (when
// States is set), idempotency (recording running and succeeded in the records with states),
// then UseInside's.
func (m *Main) Middleware() []jobs.Middleware {
	chain := append([]jobs.Middleware(nil), m.outside...)
	idem := &idempotency.Config{}
	if m.States != nil {
		chain = append(chain, m.States.Middleware(&state.MiddlewareOptions{Folded: true}))
		idem.RecordJobs = true
	}
	chain = append(chain, idempotency.Middleware(m.Store, idem))
	return append(chain, m.inside...)
}

// Start runs the workers with Middleware, on Lambda or as a container worker (jobs.Start picks
// from the environment). It does not return on Lambda.
func (m *Main) Start() {
	m.Workers.Use(m.Middleware()...)
	jobs.Start(m.Workers, m.Config)
}

func fail(name string, err error) {
	slog.Error(name+": cannot start", "err", err)
	os.Exit(1)
}
