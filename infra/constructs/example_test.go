package constructs_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/infra/constructs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// A job queue, its worker and their idempotency table in one stack. The queue's id names its
// stack outputs (JobkitQueueEmail, JobkitDlqEmail); the worker needs an id of its own beside it.
// The worker's function is built from functions/email (relative to the module at ModuleDir, itself
// relative to the working directory of the CDK app) for linux/arm64 during synth. A service's own
// CDK app passes constructs.Outdir() as the app's Outdir (see Outdir).
func Example() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Emails"), nil)

	table := constructs.NewIdempotencyTable(stack, "Idempotency", nil)
	queue := constructs.NewJobQueue(stack, "Email", &constructs.JobQueueProps{
		MaxAttempts:       5,
		VisibilityTimeout: time.Minute, // at least the function timeout
	})
	worker := constructs.NewWorker(stack, "EmailWorker", &constructs.WorkerProps{
		Source:            constructs.GoSource{ModuleDir: "../..", Package: "functions/email"},
		Queue:             queue,
		IdempotencyTable:  table,
		Kinds:             []string{"email.send"}, // its idempotency records only
		Timeout:           30 * time.Second,
		BatchSize:         25,
		MaxBatchingWindow: 2 * time.Second,
		MaxConcurrency:    10,
	})
	constructs.NewDashboard(stack, "Dashboard", &constructs.DashboardProps{
		Queues: []*constructs.JobQueue{queue}, Workers: []*constructs.Worker{worker},
	})
	app.Synth(nil)

	fmt.Println("redrive after", queue.MaxReceiveCount, "receives")
	fmt.Println(contract.EnvMaxAttempts, "=", worker.Environment[contract.EnvMaxAttempts])
	fmt.Println(contract.EnvVisibilityTimeout, "=", worker.Environment[contract.EnvVisibilityTimeout])
	// Output:
	// redrive after 8 receives
	// JOBKIT_MAX_ATTEMPTS = 5
	// JOBKIT_VISIBILITY_TIMEOUT = 60
}
