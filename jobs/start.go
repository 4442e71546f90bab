package jobs

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Start runs workers wherever the process finds itself, so one main serves both:
//
//   - on AWS Lambda (AWS_LAMBDA_RUNTIME_API is set) it calls lambda.Start with
//     NewLambdaHandler(workers, cfg), and never returns;
//   - anywhere else (a container on ECS, a local process) it runs a Consumer of cfg.QueueURL
//     with ConsumerOptionsFromEnv until SIGTERM or SIGINT, drains within JOBKIT_DRAIN_TIMEOUT
//     and returns. Dead letters name JOBKIT_WORKER_NAME as their function when cfg.FunctionName
//     is empty.
//
// Start exits the process with status 1 when the options in the environment or cfg are invalid.
func Start(workers *Workers, cfg Config) {
	if _, ok := os.LookupEnv(contract.EnvLambdaRuntimeAPI); ok {
		lambda.Start(NewLambdaHandler(workers, cfg))
		return
	}
	if cfg.FunctionName == "" {
		cfg.FunctionName = os.Getenv(contract.EnvWorkerName)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	opts, err := ConsumerOptionsFromEnv(os.LookupEnv)
	if err != nil {
		log.Error("jobs: bad consumer options", "err", err)
		os.Exit(1)
	}
	c, err := NewConsumer(workers, cfg, &opts)
	if err != nil {
		log.Error("jobs: cannot start the consumer", "err", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	_ = c.Run(ctx) // errs only when run twice
}
