package devrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/offline/devrun"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// assembly copies the deploy package's test assembly into a directory of its own, far from the
// function's sources, with the "jobkit:module" metadata the Worker construct writes: the module
// directory relative to the assembly.
func assembly(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "elsewhere", "cdk.out")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	module, err := filepath.Rel(dir, root)
	require.NoError(t, err)
	return deploytest.Assembly(t, dir, func(stack string, tpl map[string]any) {
		if stack == "JobkitWorkers" {
			deploytest.Resource(tpl, "EchoFunction8D469E43")["Metadata"].(map[string]any)["jobkit:module"] = filepath.ToSlash(module)
		}
	})
}

// Run deploys an assembly whose function's module only its metadata names (no ModuleDir: the
// default, the parent of cdk.out, holds no Go code), exports the stack outputs, and counts jobs a
// producer of its own sent to a job queue and to its dead-letter queue.
func TestRunCountsJobsOfAnyProducer(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var exports []devrun.Export
	var notes []string
	prefix := awstest.Name(t, "") + "-"
	res, err := devrun.Run(ctx, devrun.Config{
		AWS: cfg, CDKOut: assembly(t), Prefix: prefix, BuildDir: t.TempDir(), Once: true,
		Note: func(s string) { notes = append(notes, s) },
		Ready: func(e []devrun.Export) {
			exports = e
			url := lookup(e, "JobkitQueueEcho")
			for _, body := range []string{"a", "b", "c", "d", "e"} {
				_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
				require.NoError(t, err)
			}
		},
	})
	require.NoError(t, err, "notes: %s", strings.Join(notes, "\n"))
	require.NotEmpty(t, lookup(exports, "JobkitQueueEcho"))
	require.Equal(t, aws.ToString(cfg.BaseEndpoint), lookup(exports, "AWS_ENDPOINT_URL"))
	require.True(t, strings.HasPrefix(lookup(exports, contract.EnvStack), prefix),
		"the deployed stack whose outputs name the queues, for the CLI's --stack: %q", lookup(exports, contract.EnvStack))
	require.Equal(t, "export JobkitQueueEcho='"+lookup(exports, "JobkitQueueEcho")+"'", exports[indexOf(exports, "JobkitQueueEcho")].String())

	c := res.Census
	var names []string
	for _, q := range c.Queues {
		names = append(names, q.Queue.Name)
	}
	// Echo by its output, Orders by its event source mapping; the function's output queue and the
	// dead-letter queues are no job queues.
	require.Equal(t, []string{"Echo", "OrdersQueue9E8D7C6B"}, names)
	require.Equal(t, 5, c.Queues[0].Succeeded)
	require.Equal(t, 5, c.Seen)
	require.Zero(t, c.Lost)
	require.Equal(t, "DEV summary: succeeded=5 retried=0 dead=0 lost=0 cancelled=0", c.Summary())
	require.Contains(t, c.Table(), "Echo")
}

func lookup(e []devrun.Export, name string) string {
	if i := indexOf(e, name); i >= 0 {
		return e[i].Value
	}
	return ""
}

func indexOf(e []devrun.Export, name string) int {
	for i, x := range e {
		if x.Name == name {
			return i
		}
	}
	return -1
}
