package devstack_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/internal/procgroup"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Up deploys and starts in one call, Prepare sees the deployment before the functions start,
// and Down stops every process and removes the deployment.
func TestUpAndDown(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	prefix := awstest.Prefix("jkup")
	up := devstack.UpConfig{
		Config: devstack.Config{AWS: cfg, Output: &awstest.SyncBuffer{}, NoScheduler: true},
		Deploy: deploy.Options{CDKOut: fixture(t, time.Now().Add(time.Hour)), Prefix: prefix, ModuleDir: "../..", BuildDir: t.TempDir()},
		Prepare: func(_ context.Context, d *deploy.Deployment, c *devstack.Config) error {
			require.Same(t, d, c.Deployment)
			d.Functions[0].Env["UP_PREPARED"] = "yes"
			return nil
		},
	}
	r, err := devstack.Up(ctx, up)
	require.NoError(t, err)
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = r.Down(context.Background())
		}
	})
	require.Equal(t, []string{r.Deployment.Functions[0].Name}, r.Stack.Functions())

	q := sqs.NewFromConfig(cfg)
	echo := r.Deployment.Queue("EchoQueue2E8F3C41")
	_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(echo.URL), MessageBody: aws.String("up1")})
	require.NoError(t, err)
	db := dynamodb.NewFromConfig(cfg)
	var env map[string]string
	require.Eventually(t, func() bool {
		item, err := db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(r.Deployment.Tables[0].Name),
			Key:       map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "echo:up1"}},
		})
		if err != nil || item.Item == nil {
			return false
		}
		return json.Unmarshal([]byte(item.Item["env"].(*ddbtypes.AttributeValueMemberS).Value), &env) == nil
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, "yes", env["UP_PREPARED"], "the function runs with what Prepare changed")

	// A second Up of the same prefix fails and leaves the first deployment alone.
	_, err = devstack.Up(ctx, devstack.UpConfig{Config: devstack.Config{AWS: cfg}, Deploy: up.Deploy, KeepOnError: true})
	var exists *deploy.StackExistsError
	require.ErrorAs(t, err, &exists)

	pids := r.Stack.PIDs()
	require.NotEmpty(t, pids)
	require.NoError(t, r.Down(ctx))
	downed = true
	for _, pid := range pids {
		require.True(t, procgroup.Gone(pid), "process %d outlived Down", pid)
	}
	_, err = q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(echo.Name)})
	require.Error(t, err, "Down removed the deployment's queues")
}
