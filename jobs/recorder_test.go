package jobs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The recorder's environment is the constructs': the job queue, its DLQ, its maxReceiveCount and
// the worker's name.
func TestRecorderConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		contract.EnvQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", contract.EnvDLQURL: "https://sqs.us-east-1.amazonaws.com/1/dlq",
		contract.EnvMaxReceiveCount: "8", contract.EnvWorkerName: "mailer", contract.EnvPayloadBucket: "payloads",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := jobs.RecorderConfigFromEnv(lookup)
	require.NoError(t, err)
	require.Equal(t, "https://sqs.us-east-1.amazonaws.com/1/q", cfg.QueueURL)
	require.Equal(t, "https://sqs.us-east-1.amazonaws.com/1/dlq", cfg.DLQURL)
	require.Equal(t, 8, cfg.MaxReceiveCount)
	require.Equal(t, "mailer", cfg.FunctionName)
	require.Equal(t, "payloads", cfg.PayloadBucket)

	env[contract.EnvMaxReceiveCount] = "many"
	delete(env, contract.EnvDLQURL)
	_, err = jobs.RecorderConfigFromEnv(lookup)
	require.ErrorContains(t, err, "JOBKIT_DLQ_URL is not set")
	require.ErrorContains(t, err, `JOBKIT_MAX_RECEIVE_COUNT="many"`)
}
