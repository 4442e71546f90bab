package constructs_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/infra/constructs"
	"github.com/jobkit-go/jobkit/jobs"
)

// A job queue and its worker, the stateful part in its own stack. The worker's function is built
// from functions/email (relative to the module at ModuleDir) for linux/arm64 during synth.
func Example() {
	app := awscdk.NewApp(nil)
	state := awscdk.NewStack(app, jsii.String("State"), nil)
	workers := awscdk.NewStack(app, jsii.String("Workers"), nil)

	table := constructs.NewIdempotencyTable(state, "Idempotency", nil)
	queue := constructs.NewJobQueue(state, "Email", &constructs.JobQueueProps{
		MaxAttempts:       5,
		VisibilityTimeout: time.Minute, // at least the function timeout
	})
	worker := constructs.NewWorker(workers, "Email", &constructs.WorkerProps{
		Source:            constructs.GoSource{ModuleDir: "../..", Package: "functions/email"},
		Queue:             queue,
		IdempotencyTable:  table,
		Kinds:             []string{"email.send"}, // its idempotency records only
		Timeout:           30 * time.Second,
		BatchSize:         25,
		MaxBatchingWindow: 2 * time.Second,
		MaxConcurrency:    10,
	})
	constructs.NewDashboard(workers, "Dashboard", &constructs.DashboardProps{
		Queues: []*constructs.JobQueue{queue}, Workers: []*constructs.Worker{worker},
	})
	app.Synth(nil)

	fmt.Println("redrive after", queue.MaxReceiveCount, "receives")
	fmt.Println(jobs.EnvMaxAttempts, "=", worker.Environment[jobs.EnvMaxAttempts])
	fmt.Println(jobs.EnvVisibilityTimeout, "=", worker.Environment[jobs.EnvVisibilityTimeout])
	// Output:
	// redrive after 8 receives
	// JOBKIT_MAX_ATTEMPTS = 5
	// JOBKIT_VISIBILITY_TIMEOUT = 60
}
