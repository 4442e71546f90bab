// Command transcode is functions/transcode instrumented for the dev and chaos programs: the same
// TranscodeWorker, wrapped with instrument.StartLog, instrument.FaultMiddleware and, when EFFECTS_TABLE is set, the
// count of each start and each finish of a transcode (instrument.Effects).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/internal/sampleapp/instrument"
	"github.com/jobkit-go/jobkit/jobs"
)

func main() {
	cfg, err := jobs.ConfigFromEnv()
	exitOn(err)
	var effects *instrument.Effects
	if os.Getenv(instrument.EnvEffectsTable) != "" {
		awsCfg, err := config.LoadDefaultConfig(context.Background())
		exitOn(err)
		effects = instrument.EffectsFromEnv(dynamodb.NewFromConfig(awsCfg))
	}
	workers := jobs.NewWorkers()
	workers.Use(instrument.StartLog(os.Stdout), instrument.FaultMiddleware(), effects.Middleware())
	jobs.AddWorker(workers, &samplejobs.TranscodeWorker{Logger: cfg.Logger})
	jobs.Start(workers, cfg)
}

func exitOn(err error) {
	if err != nil {
		slog.Error("transcode: cannot start", "err", err)
		os.Exit(1)
	}
}
