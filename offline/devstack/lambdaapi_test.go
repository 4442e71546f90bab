package devstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// A function that no event source feeds, as a plain app's asset holds it: it answers its event
// back with its own name, fails when asked to, and, invoked as an Event, leaves a file.
const invokedFunction = `import os

def handler(event, context):
    if event.get("fail"):
        raise ValueError("asked to fail")
    if event.get("mark"):
        open(os.path.join(os.environ["OUT_DIR"], event["mark"]), "w").write("invoked")
    return {"echo": event, "function": context.function_name}
`

// The stack serves the Lambda API's Invoke for its functions (AWS_ENDPOINT_URL_LAMBDA in their
// environments): the SDK's Invoke runs a function of the stack, RequestResponse with its answer or
// its error (FunctionError Unhandled), Event in the background (202), DryRun (204); an unknown
// function is ResourceNotFoundException.
func TestInvokeThroughTheLambdaAPI(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	out := t.TempDir()
	dir := fixtureWith(t, time.Now().Add(time.Hour), func(res map[string]any) {
		res["InvokedFunction"] = pythonFunction("invoked", out)
	})
	writeAsset(t, dir, "invoked", map[string]string{"app.py": invokedFunction})
	r, err := devstack.Up(ctx, upConfig(t, cfg, dir))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Down(context.Background()) })
	var fn *deploy.Function
	for i := range r.Deployment.Functions {
		if r.Deployment.Functions[i].LogicalID == "InvokedFunction" {
			fn = &r.Deployment.Functions[i]
		}
	}
	require.NotNil(t, fn)
	client := lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = aws.String(r.Stack.LambdaEndpoint()) })

	res, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.ARN), Payload: []byte(`{"n":1}`)})
	require.NoError(t, err)
	assert.Nil(t, res.FunctionError)
	var answer struct {
		Echo     map[string]int `json:"echo"`
		Function string         `json:"function"`
	}
	require.NoError(t, json.Unmarshal(res.Payload, &answer))
	assert.Equal(t, map[string]int{"n": 1}, answer.Echo)
	assert.Equal(t, fn.Name, answer.Function, "by its ARN as by its name")

	res, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.Name), Payload: []byte(`{"fail":true}`)})
	require.NoError(t, err)
	assert.Equal(t, "Unhandled", aws.ToString(res.FunctionError))
	assert.Contains(t, string(res.Payload), "asked to fail")

	res, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.Name), InvocationType: lambdatypes.InvocationTypeEvent, Payload: []byte(`{"mark":"event"}`)})
	require.NoError(t, err)
	assert.Equal(t, int32(202), res.StatusCode)
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(out, "event")); return err == nil }, 30*time.Second, 100*time.Millisecond)

	res, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.Name), InvocationType: lambdatypes.InvocationTypeDryRun})
	require.NoError(t, err)
	assert.Equal(t, int32(204), res.StatusCode)

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("no-such-function")})
	var notFound *lambdatypes.ResourceNotFoundException
	assert.True(t, errors.As(err, &notFound), "%v", err)

	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.Name), Payload: []byte(`not json`)})
	var badContent *lambdatypes.InvalidRequestContentException
	assert.True(t, errors.As(err, &badContent), "a payload that is not JSON: %v", err)

	big := make([]byte, 1024*1024+10)
	for i := range big {
		big[i] = ' '
	}
	big[0], big[1] = '{', '}'
	_, err = client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn.Name), InvocationType: lambdatypes.InvocationTypeEvent, Payload: big})
	var tooLarge *lambdatypes.RequestTooLargeException
	assert.True(t, errors.As(err, &tooLarge), "an Event payload over 1 MB: %v", err)
}

// pythonFunction is a Python 3.12 function resource whose code is the assembly's asset.<name>
// (app.handler), with OUT_DIR=out in its environment.
func pythonFunction(name, out string) map[string]any {
	return map[string]any{
		"Type":     "AWS::Lambda::Function",
		"Metadata": map[string]any{"aws:asset:path": "asset." + name},
		"Properties": map[string]any{"Runtime": "python3.12", "Handler": "app.handler", "Timeout": 10,
			"Code": map[string]any{"S3Bucket": "assets", "S3Key": name + ".zip"}, "Environment": map[string]any{"Variables": map[string]any{"OUT_DIR": out}}},
	}
}
