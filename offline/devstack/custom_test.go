package devstack_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A custom resource's provider written in Python, as a plain app's asset holds it: it answers
// CloudFormation at the ResponseURL with urllib (the URL as it is, port included), SUCCESS with a
// physical id and data made of its properties (a queue's URL among them), or FAILED when its
// properties ask it to.
const pythonProvider = `import json, os, urllib.request

def handler(event, context):
    props = event["ResourceProperties"]
    if event["RequestType"] == "Delete":
        with open(os.path.join(os.environ["OUT_DIR"], "deletes"), "a") as f:
            f.write(event["PhysicalResourceId"] + "\n")
    ok = props.get("Outcome") != "FAILED"
    body = {"Status": "SUCCESS" if ok else "FAILED", "Reason": "" if ok else "the provider was told to fail",
            "PhysicalResourceId": event.get("PhysicalResourceId", "made-" + event["LogicalResourceId"]), "StackId": event["StackId"],
            "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
            "Data": {"Queue": props.get("Queue", ""), "Type": event["RequestType"], "Other": props.get("Other", ""), "Count": props.get("Count", "")}}
    req = urllib.request.Request(event["ResponseURL"], data=json.dumps(body).encode(), method="PUT", headers={"content-type": ""})
    urllib.request.urlopen(req).read()
`

// Custom resources are created when the stack starts, before any event source is polled: the
// provider gets CloudFormation's Create request with the resource's properties resolved, and its
// answer is the resource's physical id and data. One whose provider is not a function of the app
// (an SNS topic) is reported and left out; one whose provider answers FAILED fails the start, as
// it fails a deployment on AWS. Its Ref and data fill the functions' environments once it is made;
// a resource the emulator creates cannot take them (refused at deploy, with the reason). Down sends
// each its Delete request.
func TestCustomResourcesAreCreatedOnStart(t *testing.T) {
	t.Parallel()
	for _, outcome := range []string{"SUCCESS", "FAILED", "FEEDS_A_QUEUE"} {
		t.Run(outcome, func(t *testing.T) {
			t.Parallel()
			cfg := awstest.Config(t)
			ctx := context.Background()
			out := t.TempDir()
			dir := fixtureWith(t, time.Now().Add(time.Hour), func(res map[string]any) {
				res["ProviderFunction"] = pythonFunction("provider", out)
				res["Made"] = map[string]any{"Type": "Custom::Made", "Properties": map[string]any{
					"ServiceToken": map[string]any{"Fn::GetAtt": []any{"ProviderFunction", "Arn"}},
					"Queue":        map[string]any{"Fn::ImportValue": "JobkitState:ExportsOutputRefEchoQueue2E8F3C41A1B2C3D4"}, "Outcome": outcome,
				}}
				// A function's environment takes the resource's data and physical id.
				env := res["EchoFunction8D469E43"].(map[string]any)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
				env["MADE_TYPE"] = map[string]any{"Fn::GetAtt": []any{"Made", "Type"}}
				env["MADE_ID"] = map[string]any{"Fn::Join": []any{"/", []any{"id", map[string]any{"Ref": "Made"}}}}
				if outcome == "FEEDS_A_QUEUE" {
					// A resource the emulator creates cannot wait for a provider's answer.
					res["Fed"] = map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
						"Tags": []any{map[string]any{"Key": "made", "Value": map[string]any{"Fn::GetAtt": []any{"Made", "Type"}}}}}}
				}
				// Created after Made, whose Ref it holds (the names sort the other way).
				res["Before"] = map[string]any{"Type": "Custom::Made", "Properties": map[string]any{
					"ServiceToken": map[string]any{"Fn::GetAtt": []any{"ProviderFunction", "Arn"}},
					"Other":        map[string]any{"Fn::Sub": "after-${Made}"}, "Count": 5,
				}}
				res["ByTopic"] = map[string]any{"Type": "AWS::CloudFormation::CustomResource", "Properties": map[string]any{
					"ServiceToken": "arn:aws:sns:us-east-1:123456789012:provider-topic",
				}}
			})
			writeAsset(t, dir, "provider", map[string]string{"app.py": pythonProvider})
			r, err := devstack.Up(ctx, upConfig(t, cfg, dir))
			if outcome == "FEEDS_A_QUEUE" {
				var re *deploy.ResolveError
				require.ErrorAs(t, err, &re)
				assert.Contains(t, re.Reason, "cannot feed a resource the emulator creates offline")
				return
			}
			if outcome == "FAILED" {
				var cre *devstack.CustomResourceError
				require.ErrorAs(t, err, &cre)
				assert.Equal(t, "Made", cre.LogicalID)
				assert.Equal(t, "the provider was told to fail", cre.Reason)
				return
			}
			require.NoError(t, err)
			down := false
			t.Cleanup(func() {
				if !down {
					_ = r.Down(context.Background())
				}
			})
			made := r.Stack.CustomResources()
			require.Len(t, made, 2, "the resource whose provider is an SNS topic is left out")
			assert.Equal(t, "Made", made[0].LogicalID)
			assert.Equal(t, "Before", made[1].LogicalID, "in dependency order")
			assert.Equal(t, "after-made-Made", made[1].Data["Other"], "its property holds the other's Ref")
			assert.Equal(t, "5", made[1].Data["Count"], "numbers are sent as strings, as CloudFormation sends them")
			assert.Equal(t, "made-Made", made[0].PhysicalResourceID)
			assert.Equal(t, "Create", made[0].Data["Type"])
			fn := r.Deployment.Functions[0]
			assert.Equal(t, "Create", fn.Env["MADE_TYPE"], "a Fn::GetAtt of the resource's data, filled in when it is created")
			assert.Equal(t, "id/made-Made", fn.Env["MADE_ID"], "its Ref, inside a Fn::Join")
			echo := r.Deployment.Queue("EchoQueue2E8F3C41")
			assert.Equal(t, echo.Name, filepath.Base(made[0].Data["Queue"].(string)), "the import of a queue's URL resolved")

			// Down deletes them as a stack's deletion does: a Delete request each, with its
			// physical id, in the reverse of their creation order.
			down = true
			require.NoError(t, r.Down(ctx))
			deletes, err := os.ReadFile(filepath.Join(out, "deletes"))
			require.NoError(t, err)
			assert.Equal(t, "made-Before\nmade-Made\n", string(deletes))
		})
	}
}
