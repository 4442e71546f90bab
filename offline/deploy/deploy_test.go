package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// moduleDir is the module root, which "jobkit:source" paths are relative to.
const moduleDir = "../.."

func prefix() string { return awstest.Prefix("jk") }

func resource(tpl map[string]any, id string) map[string]any {
	return tpl["Resources"].(map[string]any)[id].(map[string]any)
}

func props(tpl map[string]any, id string) map[string]any {
	return resource(tpl, id)["Properties"].(map[string]any)
}

func TestDeployAssembly(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	clients := deploy.NewClients(cfg)
	p := prefix()
	d, err := deploy.Deploy(ctx, clients, &deploy.Options{
		CDKOut: deploytest.Assembly(t, "", nil), Prefix: p, ModuleDir: moduleDir, BuildDir: t.TempDir(),
	})
	if d != nil {
		destroyed := false
		t.Cleanup(func() {
			if !destroyed {
				_ = d.Destroy(context.Background())
			}
		})
		defer func() { destroyed = true }()
	}
	require.NoError(t, err)

	cfn := cloudformation.NewFromConfig(cfg)
	require.Len(t, d.Stacks, 2)
	for i, name := range []string{p + "JobkitState", p + "JobkitWorkers"} {
		require.Equal(t, name, d.Stacks[i].Name)
		out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		require.NoError(t, err)
		require.Equal(t, cfntypes.StackStatusCreateComplete, out.Stacks[0].StackStatus)
	}

	// Queues as the template defines them; the conditional one is not created.
	require.Len(t, d.Queues, 5)
	require.Nil(t, d.Queue("OnlyElsewhereQueue5A5A5A5A"))
	echo, dlq, out, orders := d.Queue("EchoQueue2E8F3C41"), d.Queue("EchoDLQ4B8B1D5E"), d.Queue("OutQueue1F2E3D4C"), d.Queue("OrdersQueue9E8D7C6B")
	require.Equal(t, 20*time.Second, echo.VisibilityTimeout)
	require.Equal(t, dlq.ARN, echo.DeadLetterARN)
	require.Equal(t, 3, echo.MaxReceiveCount)
	require.True(t, orders.FIFO)
	require.Equal(t, d.Queue("OrdersDLQ0A6B2C3D").ARN, orders.DeadLetterARN)
	require.Equal(t, echo.URL, d.Stacks[0].Outputs["JobkitQueueEcho"])
	q := sqs.NewFromConfig(cfg)
	got, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(echo.Name)})
	require.NoError(t, err)
	require.Contains(t, aws.ToString(got.QueueUrl), echo.Name)

	// Time to live, which the emulator's CloudFormation ignores, is on.
	require.Len(t, d.Tables, 1)
	table := d.Tables[0]
	ddb := dynamodb.NewFromConfig(cfg)
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table.Name)})
	require.NoError(t, err)
	require.Equal(t, ddbtypes.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	require.Equal(t, "expiration", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
	require.Equal(t, "expiration", table.TTLAttribute)

	// ARNs name the emulator's own account (moto's 123456789012, LocalStack's 000000000000).
	acct := awstest.Account(t)
	require.Equal(t, acct, d.AccountID)

	// The function sees every reference resolved.
	require.Len(t, d.Functions, 1)
	fn := d.Functions[0]
	logGroup := p + "JobkitWorkers-EchoLogs8FF0C9F6"
	require.Equal(t, map[string]string{
		"JOBKIT_QUEUE_URL":          echo.URL,
		"JOBKIT_DLQ_URL":            dlq.URL,
		"JOBKIT_IDEMPOTENCY_TABLE":  table.Name,
		"JOBKIT_MAX_ATTEMPTS":       "5",
		"JOBKIT_VISIBILITY_TIMEOUT": "20",
		"OUT_QUEUE_URL":             out.URL,
		"ROLE_ARN":                  "arn:aws:iam::" + acct + ":role/" + p + "JobkitWorkers-EchoRoleE0766E68",
		"LOG_GROUP":                 logGroup,
		"WHERE":                     "us-east-1/" + acct + "/" + logGroup + "/${Literal}",
		"DLQ_ARNS":                  dlq.ARN + ",b",
		"STAGE":                     "home",
		"AWS_LAMBDA_LOG_FORMAT":     "JSON",
	}, fn.Env)
	require.Equal(t, p+"JobkitWorkers-EchoFunction8D469E43", fn.Name)
	require.Equal(t, "arn:aws:lambda:us-east-1:"+acct+":function:"+fn.Name, fn.ARN)
	require.Equal(t, 10*time.Second, fn.Timeout)
	require.Equal(t, 256, fn.MemoryMB)
	require.Equal(t, "offline/deploy/testdata/echofn", fn.Source)
	st, err := os.Stat(fn.Bootstrap)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&0o111, "bootstrap is executable")

	require.Equal(t, []deploy.EventSourceMapping{
		{Stack: p + "JobkitWorkers", LogicalID: "EchoFunctionSqsEventSourceJobkitStateEchoQueue0C589B72D9533864",
			UUID: d.Mappings[0].UUID, Function: fn.Name, QueueARN: echo.ARN, QueueURL: echo.URL, BatchSize: 5,
			MaximumBatchingWindow: time.Second, MaximumConcurrency: 2, ReportBatchItemFailures: true, Enabled: true},
		{Stack: p + "JobkitWorkers", LogicalID: "EchoFunctionSqsEventSourceJobkitStateOrdersQueue3633220F61D9A1EB",
			UUID: d.Mappings[1].UUID, Function: fn.Name, QueueARN: orders.ARN, QueueURL: orders.URL, BatchSize: 10,
			ReportBatchItemFailures: true, Enabled: true},
	}, d.Mappings)

	// The schedule group and schedule exist on the emulator, resolved.
	require.Len(t, d.ScheduleGroups, 1)
	group := d.ScheduleGroups[0].Name
	require.Equal(t, p+"JobkitWorkers-DelayedGroup7B3C1A2D", group)
	sch := scheduler.NewFromConfig(cfg)
	s, err := sch.GetSchedule(ctx, &scheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String(d.Schedules[0].Name)})
	require.NoError(t, err)
	require.Equal(t, "cron(0 3 * * ? *)", aws.ToString(s.ScheduleExpression))
	require.Equal(t, "Europe/Paris", aws.ToString(s.ScheduleExpressionTimezone))
	require.Equal(t, echo.ARN, aws.ToString(s.Target.Arn))
	require.Equal(t, "arn:aws:iam::"+acct+":role/"+p+"JobkitWorkers-SchedulerRole5E6F7A8B", aws.ToString(s.Target.RoleArn))
	require.Equal(t, "scheduled-nightly", aws.ToString(s.Target.Input))
	require.Equal(t, dlq.ARN, aws.ToString(s.Target.DeadLetterConfig.Arn))
	require.Equal(t, int32(3), aws.ToInt32(s.Target.RetryPolicy.MaximumRetryAttempts))

	// Outputs referring to local resources carry their values; exports are on the emulator.
	require.Equal(t, fn.ARN, d.Stacks[1].Exports[p+"JobkitWorkers:EchoFunctionArn"])
	require.Equal(t, group, d.Stacks[1].Outputs["ScheduleGroupName"])

	skipped := map[string]string{}
	for _, s := range d.Skipped {
		skipped[s.LogicalID] = s.Type
	}
	want := map[string]string{
		"EchoDLQDepthAlarm5C7E0F21":     "AWS::CloudWatch::Alarm",
		"EchoLogs8FF0C9F6":              "AWS::Logs::LogGroup",
		"EchoRoleE0766E68":              "AWS::IAM::Role",
		"EchoRoleDefaultPolicy9C88167B": "AWS::IAM::Policy",
		"EchoErrorsAlarm1A2B3C4D":       "AWS::CloudWatch::Alarm",
		"Dashboard7A714131":             "AWS::CloudWatch::Dashboard",
		"SchedulerRole5E6F7A8B":         "AWS::IAM::Role",
	}
	policy, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(echo.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy}})
	require.NoError(t, err)
	if awstest.Emulator() == awstest.EmulatorMoto {
		// CloudFormation sets the queue's Policy from an AWS::SQS::QueuePolicy (LocalStack does);
		// moto's CloudFormation skips the type, and the deployment says so.
		want["EchoQueuePolicy7D1B9A11"] = "AWS::SQS::QueuePolicy"
	} else {
		require.Contains(t, policy.Attributes[string(sqstypes.QueueAttributeNamePolicy)], "sqs:*", "the queue policy is on the queue")
	}
	require.Equal(t, want, skipped)

	// Destroy removes it all.
	require.NoError(t, d.Destroy(ctx))
	for _, st := range d.Stacks {
		out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(st.Name)})
		if err == nil {
			for _, s := range out.Stacks {
				require.Equal(t, cfntypes.StackStatusDeleteComplete, s.StackStatus)
			}
		}
	}
	_, err = q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(echo.Name)})
	require.Error(t, err)
	_, err = ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)})
	require.Error(t, err)
	_, err = sch.GetScheduleGroup(ctx, &scheduler.GetScheduleGroupInput{Name: aws.String(group)})
	require.Error(t, err)
}

// Lambda refuses a mapping whose queue's visibility timeout is shorter than the function timeout.
func TestDeployRefusesAVisibilityTimeoutShorterThanTheFunctionTimeout(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	dir := deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack == "JobkitWorkers" {
			props(tpl, "EchoFunction8D469E43")["Timeout"] = 25
		}
	})
	d, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), &deploy.Options{CDKOut: dir, Prefix: prefix(), SkipBuild: true})
	if d != nil {
		t.Cleanup(func() { _ = d.Destroy(context.Background()) })
	}
	var cfgErr *deploy.ConfigError
	require.ErrorAs(t, err, &cfgErr)
	require.Contains(t, cfgErr.Reason, "visibility timeout 20s is less than function")
}

func TestDeployTwiceIsAStackExistsError(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	dir, p := deploytest.Assembly(t, "", nil), prefix()
	opts := &deploy.Options{CDKOut: dir, Prefix: p, SkipBuild: true, Stacks: []string{"JobkitState"}}
	d := deploytest.Deploy(t, cfg, opts)
	require.Len(t, d.Stacks, 1, "only the stack asked for")
	_, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), opts)
	var exists *deploy.StackExistsError
	require.ErrorAs(t, err, &exists)
	require.Equal(t, p+"JobkitState", exists.Stack)
}

func TestDeployReportsAnUnresolvableReference(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	dir := deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack == "JobkitWorkers" {
			env := props(tpl, "EchoFunction8D469E43")["Environment"].(map[string]any)["Variables"].(map[string]any)
			env["MISSING"] = map[string]any{"Fn::ImportValue": "JobkitState:NoSuchExport"}
		}
	})
	d, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), &deploy.Options{CDKOut: dir, Prefix: prefix(), SkipBuild: true})
	if d != nil {
		t.Cleanup(func() { _ = d.Destroy(context.Background()) })
	}
	var resErr *deploy.ResolveError
	require.ErrorAs(t, err, &resErr)
	require.Contains(t, resErr.Reason, `no export named "JobkitState:NoSuchExport"`)
}

func TestReadAssemblyOrdersStacksByDependency(t *testing.T) {
	t.Parallel()
	stacks, err := deploy.ReadAssembly("testdata/assembly")
	require.NoError(t, err)
	require.Len(t, stacks, 2)
	require.Equal(t, "JobkitState", stacks[0].Name)
	require.Equal(t, "JobkitWorkers", stacks[1].Name)
	require.Equal(t, []string{"JobkitState"}, stacks[1].DependsOn)

	_, err = deploy.ReadAssembly(t.TempDir())
	require.ErrorIs(t, err, os.ErrNotExist)
}

// Explicit physical names (a schedule group's Name, a function's FunctionName) get the prefix
// too, so two deployments of one assembly can share an emulator.
func TestExplicitNamesArePrefixed(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	dir := deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack == "JobkitWorkers" {
			r := tpl["Resources"].(map[string]any)["DelayedGroup7B3C1A2D"].(map[string]any)
			r["Properties"] = map[string]any{"Name": "JobkitWorkers-Delayed-Group-FIXED"}
		}
	})
	var groups []string
	for range 2 {
		p := prefix()
		d := deploytest.Deploy(t, cfg, &deploy.Options{CDKOut: dir, Prefix: p, SkipBuild: true})
		require.Len(t, d.ScheduleGroups, 1)
		require.Equal(t, p+"JobkitWorkers-Delayed-Group-FIXED", d.ScheduleGroups[0].Name)
		require.Equal(t, d.ScheduleGroups[0].Name, d.Stacks[1].Outputs["ScheduleGroupName"], "references see the prefixed name")
		groups = append(groups, d.ScheduleGroups[0].Name)
	}
	require.NotEqual(t, groups[0], groups[1])
}

// A function whose "jobkit:source" is an import path — the redrive recorder the constructs add,
// contract.RecorderPackage — is built by that path in its module (here the repository's, named by
// "jobkit:module" relative to the assembly, as the constructs write it), and runs.
func TestDeployBuildsAFunctionFromAnImportPath(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	root, err := filepath.Abs(moduleDir)
	require.NoError(t, err)
	const module = "MODULE-RELATIVE-TO-THE-ASSEMBLY"
	dir := deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack == "JobkitWorkers" {
			resource(tpl, "EchoFunction8D469E43")["Metadata"] = map[string]any{
				deploy.SourceMetadataKey: contract.RecorderPackage, deploy.ModuleMetadataKey: module,
			}
		}
	})
	rel, err := filepath.Rel(dir, root)
	require.NoError(t, err)
	workers := filepath.Join(dir, "JobkitWorkers.template.json")
	raw, err := os.ReadFile(workers)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(workers, bytes.ReplaceAll(raw, []byte(module), []byte(filepath.ToSlash(rel))), 0o644))
	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: dir, Prefix: prefix(), ModuleDir: t.TempDir(), BuildDir: t.TempDir(), Stacks: []string{"JobkitState", "JobkitWorkers"},
	})
	require.Len(t, d.Functions, 1)
	fn := d.Functions[0]
	require.Equal(t, contract.RecorderPackage, fn.Source)
	require.Equal(t, root, fn.ModuleDir, "the module the metadata names, not Options.ModuleDir")

	rt, err := lambdaruntime.New(lambdaruntime.Function{Name: fn.Name, Bootstrap: fn.Bootstrap, Env: fn.Env, Timeout: fn.Timeout},
		&lambdaruntime.Options{Endpoint: awstest.Endpoint(), Output: io.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	res, err := rt.Invoke(context.Background(), []byte(`{"Records":[]}`))
	require.NoError(t, err)
	require.NoError(t, res.Err())
	require.JSONEq(t, `{"batchItemFailures":null}`, string(res.Payload), "the recorder answered an empty batch")
}

// An app jobkit's constructs did not make: a Go function whose template names no source package
// (built from the package --source maps its logical id to), a Go function with nothing to build
// from, one whose package does not build, a Node.js function without its asset and a Java
// function. What can run is built; what cannot is skipped — listed in Deployment.Skipped with
// what to do — and the deployment goes on.
// (Node.js and Python functions with their assets run: devstack's TestInterpretedFunctionsRun.)
func TestDeployRunsWhatItCanOfAPlainApp(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	const echo = "EchoFunction8D469E43"
	dir := deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack != "JobkitWorkers" {
			return
		}
		fn := resource(tpl, echo)
		delete(fn, "Metadata") // no jobkit:source, no asset: as in a plain CDK app's template
		clone := func(id, runtime, handler string) {
			b, err := json.Marshal(fn)
			require.NoError(t, err)
			var c map[string]any
			require.NoError(t, json.Unmarshal(b, &c))
			c["Properties"].(map[string]any)["Runtime"], c["Properties"].(map[string]any)["Handler"] = runtime, handler
			tpl["Resources"].(map[string]any)[id] = c
		}
		clone("NodeFunction", "nodejs20.x", "index.handler")
		clone("JavaFunction", "java21", "example.Handler::handleRequest")
		clone("UnmappedGoFunction", "provided.al2023", "bootstrap")
		clone("BrokenGoFunction", "provided.al2023", "bootstrap")
	})
	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: dir, Prefix: prefix(), ModuleDir: moduleDir, BuildDir: t.TempDir(),
		Sources: map[string]string{echo: "offline/deploy/testdata/echofn", "BrokenGoFunction": "offline/deploy/testdata/brokenfn"},
	})
	byID := map[string]deploy.Function{}
	for _, fn := range d.Functions {
		byID[fn.LogicalID] = fn
	}
	require.NotEmpty(t, byID[echo].Bootstrap, "built from the package --source names")
	require.Empty(t, byID[echo].Unrunnable)
	require.NoError(t, checkBootstrap(byID[echo].Bootstrap))
	for id, want := range map[string]string{
		"NodeFunction":       "no asset: nothing to run",
		"JavaFunction":       "runtime java21 does not run offline: Go (a provided runtime with a Go bootstrap), Node.js and Python functions do",
		"UnmappedGoFunction": "--source UnmappedGoFunction=<package>",
		"BrokenGoFunction":   "its Go package offline/deploy/testdata/brokenfn did not build",
	} {
		assert.Empty(t, byID[id].Bootstrap, id)
		assert.Contains(t, byID[id].Unrunnable, want, id)
		assert.True(t, slices.ContainsFunc(d.Skipped, func(s deploy.Skipped) bool { return s.LogicalID == id && s.Reason == byID[id].Unrunnable }), id)
		assert.ErrorContains(t, d.Whole(), "function "+id+" (", "Whole names it")
	}
	assert.Contains(t, byID["BrokenGoFunction"].Unrunnable, "cannot use", "the compiler's message")
}

// checkBootstrap reports an error unless path is an executable file.
func checkBootstrap(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}
