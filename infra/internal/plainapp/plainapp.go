// Package plainapp is a CDK app written as a plain CDK app, with none of jobkit's constructs: three
// SQS queues, each consumed by a function of its own — Go (provided.al2023 on arm64, its bootstrap
// built by the app's owner), Node.js and Python — through an SQS event source with batch item
// failures; and two custom resources: an AwsCustomResource (its provider is CDK's Node.js function)
// that sends a message to the Node.js function's queue when it is created, and one behind CDK's
// Provider framework, whose Node.js function invokes a Python onEvent handler through the Lambda
// API.
// TestPlainAppOnTheOfflineStack runs it on the offline stack, as `jobkit dev` runs a service's app.
package plainapp

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Assets are the functions' code directories: GoBootstrap holds a "bootstrap" built for
// linux/arm64; Node holds index.mjs; Python holds app.py; Provider holds the onEvent handler's
// app.py.
type Assets struct {
	GoBootstrap, Node, Python, Provider string
}

// CustomResourceMessage is the body the custom resource sends to the Node.js function's queue.
const CustomResourceMessage = "from-custom-resource"

// NewStack defines the app's stack. outDir is each function's OUT_DIR, where it writes what it
// received.
func NewStack(scope constructs.Construct, id string, assets Assets, outDir string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	env := &map[string]*string{"OUT_DIR": jsii.String(outDir)}
	for _, fn := range []struct {
		name, handler, code string
		runtime             awslambda.Runtime
		arch                awslambda.Architecture
	}{
		{"Go", "bootstrap", assets.GoBootstrap, awslambda.Runtime_PROVIDED_AL2023(), awslambda.Architecture_ARM_64()},
		{"Node", "index.handler", assets.Node, awslambda.Runtime_NODEJS_22_X(), awslambda.Architecture_X86_64()},
		{"Python", "app.handler", assets.Python, awslambda.Runtime_PYTHON_3_12(), awslambda.Architecture_X86_64()},
	} {
		queue := awssqs.NewQueue(stack, jsii.String(fn.name+"Queue"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(30))})
		f := awslambda.NewFunction(stack, jsii.String(fn.name+"Function"), &awslambda.FunctionProps{
			Runtime: fn.runtime, Architecture: fn.arch, Handler: jsii.String(fn.handler),
			Code: awslambda.Code_FromAsset(jsii.String(fn.code), nil), Environment: env,
			Timeout: awscdk.Duration_Seconds(jsii.Number(10)),
		})
		f.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{
			BatchSize: jsii.Number(5), ReportBatchItemFailures: jsii.Bool(true),
		}))
		awscdk.NewCfnOutput(stack, jsii.String(fn.name+"QueueUrl"), &awscdk.CfnOutputProps{Value: queue.QueueUrl()})
		if fn.name == "Node" {
			customresources.NewAwsCustomResource(stack, jsii.String("SendOnCreate"), &customresources.AwsCustomResourceProps{
				OnCreate: &customresources.AwsSdkCall{
					Service: jsii.String("SQS"), Action: jsii.String("sendMessage"),
					Parameters:         map[string]any{"QueueUrl": queue.QueueUrl(), "MessageBody": CustomResourceMessage},
					PhysicalResourceId: customresources.PhysicalResourceId_FromResponse(jsii.String("MessageId")),
				},
				Policy:              customresources.AwsCustomResourcePolicy_FromSdkCalls(&customresources.SdkCallsPolicyOptions{Resources: customresources.AwsCustomResourcePolicy_ANY_RESOURCE()}),
				InstallLatestAwsSdk: jsii.Bool(false),
			})
		}
	}
	onEvent := awslambda.NewFunction(stack, jsii.String("GreetingOnEvent"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PYTHON_3_12(), Handler: jsii.String("app.handler"),
		Code: awslambda.Code_FromAsset(jsii.String(assets.Provider), nil), Timeout: awscdk.Duration_Seconds(jsii.Number(10)),
	})
	provider := customresources.NewProvider(stack, jsii.String("GreetingProvider"), &customresources.ProviderProps{OnEventHandler: onEvent})
	greeting := awscdk.NewCustomResource(stack, jsii.String("Greeting"), &awscdk.CustomResourceProps{
		ServiceToken: provider.ServiceToken(), Properties: &map[string]any{"Name": "offline"},
	})
	awscdk.NewCfnOutput(stack, jsii.String("GreetingRef"), &awscdk.CfnOutputProps{Value: greeting.Ref()})
	return stack
}
