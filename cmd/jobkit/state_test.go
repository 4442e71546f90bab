package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/state"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

type thumb struct {
	Image string `json:"image"`
}

func (thumb) Kind() string { return "image.thumb" }

type thumbsDone struct{ state.BatchResult }

func (thumbsDone) Kind() string { return "image.thumbs_done" }

func TestJobAndBatchShow(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q := awstest.CreateQueue(t, cfg, "q", nil)
	name := awstest.CreateTable(t, cfg, "state", idempotency.AttrID, "")
	table, err := state.New(dynamodb.NewFromConfig(cfg), name, nil)
	require.NoError(t, err)
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q.URL, State: table})
	require.NoError(t, err)
	ctx := context.Background()
	res, err := client.Enqueue(ctx, thumb{Image: "a.png"}, nil)
	require.NoError(t, err)

	out, errOut, code := cli(t, "", "job", "show", res.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "enqueued")
	assert.Contains(t, out, "image.thumb")

	out, errOut, code = cli(t, "", "job", "show", res.ID, "--state-table", name, "--json")
	require.Equal(t, 0, code, errOut)
	var doc jobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, jobs.StateEnqueued, doc.Job.State)
	assert.Equal(t, res.ID, doc.Job.ID)

	_, errOut, code = cli(t, "", "job", "show", "nope", "--state-table", name)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no state recorded")

	b, err := table.OpenBatch(ctx, client, state.BatchOpts{Callback: thumbsDone{}})
	require.NoError(t, err)
	_, err = b.Add(ctx, []jobs.BatchJob{{Args: thumb{Image: "1"}}, {Args: thumb{Image: "2"}}})
	require.NoError(t, err)
	out, errOut, code = cli(t, "", "batch", "show", b.ID, "--state-table", name)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "open")
	assert.Regexp(t, `members\s+2`, out)
	assert.Regexp(t, `pending\s+2`, out)

	out, errOut, code = cli(t, "", "batch", "show", b.ID, "--state-table", name, "--json")
	require.Equal(t, 0, code, errOut)
	var bdoc batchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &bdoc))
	assert.Equal(t, 2, bdoc.Batch.Total)
	assert.Equal(t, "image.thumbs_done", bdoc.Batch.CallbackKind)
}
