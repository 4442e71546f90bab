package plainapp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// goPackage is the Go function's main package, relative to the infra module.
const goPackage = "internal/plainapp/testdata/gofn"

// A CDK app written without jobkit — a Go, a Node.js and a Python function, each on an SQS queue —
// runs on the offline stack as `jobkit dev` runs it. Deployed as it is, the Go function, whose
// asset is a bootstrap built for arm64 and whose template names no source package, is skipped
// with the flag that maps it (--source <logical id>=<package>), and the other two are still
// made to run. Deployed with that mapping, all three run: each function gets its records, and the
// mapping reads each one's batch item failures (the failed record is not deleted). The app's
// custom resource is created by CDK's own Node.js provider (the AWS SDK for JavaScript it requires
// from NODE_PATH), which sends its message through the emulator: the Node.js function gets it,
// and its id is the resource's physical id, as the provider answered CloudFormation. The other
// custom resource, behind CDK's Provider framework, is created by the framework's Node.js
// function invoking the app's Python onEvent handler through the Lambda API.
func TestPlainAppOnTheOfflineStack(t *testing.T) {
	cfg := awstest.Config(t)
	if os.Getenv("JOBKIT_NODE_MODULES") == "" {
		const how = "JOBKIT_NODE_MODULES is unset: CDK's Node.js providers need the AWS SDK for JavaScript; `make test` installs it (.tools/node-sdk) and sets it"
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	ctx := context.Background()
	module, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)

	// The app's owner builds the Go function for Lambda, as a Makefile of theirs would.
	goAsset := t.TempDir()
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", filepath.Join(goAsset, "bootstrap"), "./"+goPackage)
	build.Dir = module
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)

	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	NewStack(app, "Plain", Assets{GoBootstrap: goAsset, Node: "testdata/node", Python: "testdata/python", Provider: "testdata/provider"}, out)
	cdkOut := *app.Synth(nil).Directory()
	goID := goFunctionID(t, filepath.Join(cdkOut, "Plain.template.json"))

	// As it is: the Go function cannot run here and says how to map it; the others can.
	d, err := deploy.Deploy(ctx, deploy.NewClients(cfg), &deploy.Options{
		CDKOut: cdkOut, Prefix: awstest.Name(t, "") + "-", ModuleDir: module, BuildDir: t.TempDir(),
	})
	require.NoError(t, err)
	for _, fn := range d.Functions {
		if fn.LogicalID == goID {
			if runtime.GOOS != "linux" || runtime.GOARCH != "arm64" { // on linux/arm64 the asset runs as it is
				assert.Contains(t, fn.Unrunnable, "--source "+goID+"=<package>", "the Go function names the flag that maps it")
			}
		} else {
			assert.Empty(t, fn.Unrunnable, fn.LogicalID)
			assert.NotEmpty(t, fn.Bootstrap, fn.LogicalID)
		}
	}
	require.NoError(t, d.Destroy(ctx))

	// With the Go function mapped to its package, as `jobkit dev --source <id>=<package>` does.
	var settled esm.Settled
	r, err := devstack.Up(ctx, devstack.UpConfig{
		Deploy: deploy.Options{
			CDKOut: cdkOut, Prefix: awstest.Name(t, "") + "-", ModuleDir: module, BuildDir: t.TempDir(),
			Sources: map[string]string{goID: goPackage},
		},
		Config: devstack.Config{AWS: cfg, Output: &awstest.SyncBuffer{}, NoScheduler: true, OnBatch: func(_ string, rep esm.BatchReport) { settled.Record(rep) }},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Down(context.Background()) })
	require.NoError(t, r.Deployment.Whole(), "every function runs")

	made := r.Stack.CustomResources()
	require.Len(t, made, 2, "the custom resources are created")
	byType := map[string]devstack.CustomResource{}
	for _, m := range made {
		byType[m.Type] = m
	}
	greeting := byType["AWS::CloudFormation::CustomResource"]
	assert.Equal(t, "greeting-offline", greeting.PhysicalResourceID, "the Provider framework's function invoked the onEvent handler and answered with its result")
	assert.Equal(t, "hello offline", greeting.Data["Greeting"])
	assert.Equal(t, "greeting-offline", r.Deployment.Stacks[0].Outputs["GreetingRef"], "an output of the resource's Ref, filled in when it is created")
	made = []devstack.CustomResource{byType["Custom::AWS"]}
	var got []byte
	require.Eventually(t, func() bool {
		got, err = os.ReadFile(filepath.Join(out, made[0].PhysicalResourceID))
		return err == nil && len(got) > 0
	},
		time.Minute, 100*time.Millisecond, "the Node.js function gets the custom resource's message, whose id is its physical id")
	assert.Equal(t, "node:"+CustomResourceMessage, string(got))

	q := sqs.NewFromConfig(cfg)
	for _, lang := range []string{"Go", "Node", "Python"} {
		url := r.Deployment.Stacks[0].Outputs[lang+"QueueUrl"]
		require.NotEmpty(t, url, lang)
		ids := map[string]string{} // body → message id
		for _, body := range []string{"a", "b", "fail"} {
			res, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
			require.NoError(t, err)
			ids[body] = aws.ToString(res.MessageId)
		}
		prefix := map[string]string{"Go": "go:", "Node": "node:", "Python": "python:"}[lang]
		for body, id := range ids {
			var got []byte
			// The function creates the file, then writes it: wait for its content, not its name.
			require.Eventually(t, func() bool { got, err = os.ReadFile(filepath.Join(out, id)); return err == nil && len(got) > 0 },
				time.Minute, 100*time.Millisecond, "%s got %q", lang, body)
			assert.Equal(t, prefix+body, string(got))
		}
		require.Eventually(t, func() bool {
			return settled.Deleted(ids["a"]) && settled.Deleted(ids["b"]) && settled.Failed(ids["fail"])
		}, time.Minute, 100*time.Millisecond, "%s: the mapping deletes what succeeded and keeps the failed record", lang)
		assert.False(t, settled.Deleted(ids["fail"]), "%s: the failed record was deleted", lang)
	}
}

// goFunctionID returns the logical id of the template's Go function (runtime provided.al2023).
func goFunctionID(t *testing.T, template string) string {
	t.Helper()
	raw, err := os.ReadFile(template)
	require.NoError(t, err)
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct{ Runtime string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &tpl))
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Lambda::Function" && r.Properties.Runtime == "provided.al2023" {
			return id
		}
	}
	t.Fatal("no Go function in the template")
	return ""
}
