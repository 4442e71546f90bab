package constructs

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// workerFixture builds a stack with a queue, a table and a worker consuming the queue.
func workerFixture(t *testing.T, qp *JobQueueProps, wp WorkerProps) (awscdk.App, awscdk.Stack, *JobQueue, *IdempotencyTable, *Worker) {
	t.Helper()
	app, stack := newStack(t)
	q := NewJobQueue(stack, "Jobs", qp)
	table := NewIdempotencyTable(stack, "Idempotency", nil)
	wp.Queue = q
	wp.IdempotencyTable = table
	if wp.Source.Package == "" {
		wp.Source = helloSource
	}
	w := NewWorker(stack, "Worker", &wp)
	return app, stack, q, table, w
}

// queueIDs returns the logical ids of a job queue (the queue with a redrive policy) and of its
// dead-letter queue.
func queueIDs(t *testing.T, tpl template) (mainID, dlqID string) {
	t.Helper()
	for id, body := range tpl.Resources("AWS::SQS::Queue") {
		if strings.Contains(id, "Moved") {
			continue // the holding queue of the redrive recorder
		}
		if get(body, "Properties.RedrivePolicy") != nil {
			mainID = id
		} else {
			dlqID = id
		}
	}
	require.NotEmpty(t, mainID)
	require.NotEmpty(t, dlqID)
	return mainID, dlqID
}

func TestWorkerStandard(t *testing.T) {
	_, stack, _, _, w := workerFixture(t, &JobQueueProps{MaxAttempts: 7, VisibilityTimeout: 90 * time.Second}, WorkerProps{
		Timeout: time.Minute, MemorySize: 512, BatchSize: 50, MaxBatchingWindow: 5 * time.Second,
		MaxConcurrency: 4, ReservedConcurrency: 6, Concurrency: 8, BackoffBase: 2 * time.Second, BackoffCap: 10 * time.Minute,
		Environment:  map[string]string{"SENDER": "jobs@example.com"},
		Kinds:        []string{"email.send", "email.digest"},
		RateLimiters: []string{"partner-api"},
	})
	tpl := synth(t, stack)
	mainID, dlqID := queueIDs(t, tpl)
	tableID, _ := tpl.Only(t, "AWS::DynamoDB::Table")
	fnID, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	fn := props(fnBody)

	// The mapping: partial batch failures, batch size, window, maximum concurrency.
	_, esm := workerOnly(t, tpl, "AWS::Lambda::EventSourceMapping")
	m := props(esm)
	require.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"])
	require.Equal(t, float64(50), m["BatchSize"])
	require.Equal(t, float64(5), m["MaximumBatchingWindowInSeconds"])
	require.Equal(t, float64(4), get(m, "ScalingConfig.MaximumConcurrency"))
	require.Equal(t, getAtt(mainID, "Arn"), m["EventSourceArn"])
	require.Equal(t, ref(fnID), m["FunctionName"])

	// The function: provided.al2023 on arm64, JSON logs into its own log group with retention.
	require.Equal(t, "provided.al2023", fn["Runtime"])
	require.Equal(t, []any{"arm64"}, fn["Architectures"])
	require.Equal(t, "bootstrap", fn["Handler"])
	require.Equal(t, float64(60), fn["Timeout"])
	require.Equal(t, float64(512), fn["MemorySize"])
	require.NotContains(t, fn, "FunctionName", "no fixed resource names")
	require.Equal(t, float64(6), fn["ReservedConcurrentExecutions"], "a lane's reserved capacity")
	logID, logGroup := workerOnly(t, tpl, "AWS::Logs::LogGroup")
	require.Equal(t, float64(30), get(logGroup, "Properties.RetentionInDays"))
	require.Equal(t, "JSON", get(fn, "LoggingConfig.LogFormat"))
	require.Equal(t, ref(logID), get(fn, "LoggingConfig.LogGroup"))
	require.Equal(t, "constructs/testdata/hello", get(fnBody, "Metadata."+SourceMetadataKey))
	// The module's directory, relative to the cloud assembly: the offline stack never guesses it.
	mod, _ := get(fnBody, "Metadata."+ModuleMetadataKey).(string)
	wantModule, err := filepath.Abs(helloSource.ModuleDir)
	require.NoError(t, err)
	require.Equal(t, wantModule, filepath.Join(*awscdk.Stage_Of(stack).Outdir(), filepath.FromSlash(mod)))

	// The environment is exactly what jobs.ConfigFromEnv reads, plus the caller's.
	require.Equal(t, map[string]any{
		contract.EnvQueueURL:          ref(mainID),
		contract.EnvDLQURL:            ref(dlqID),
		contract.EnvMaxAttempts:       "7",
		contract.EnvMaxReceiveCount:   "10", // the queue's redrive: 7 attempts + the Standard margin of 3
		contract.EnvVisibilityTimeout: "90",
		contract.EnvConcurrency:       "8",
		contract.EnvBackoffBase:       "2s",
		contract.EnvBackoffCap:        "10m0s",
		contract.EnvIdempotencyTable:  ref(tableID),
		contract.EnvIdempotencyExpiry: "432h0m0s", // the queue's 4 d + the DLQ's 14 d: redriven jobs are still skipped
		"SENDER":                      "jobs@example.com",
	}, get(fn, "Environment.Variables"))
	for _, d := range []string{"2s", "10m0s"} {
		_, err := time.ParseDuration(d)
		require.NoError(t, err)
	}

	// Least privilege: its queue, its DLQ, its table, its log group — nothing else, no wildcards.
	_, roleBody := workerOnly(t, tpl, "AWS::IAM::Role")
	require.NotContains(t, props(roleBody), "ManagedPolicyArns", "no AWS managed policy")
	roleID, _ := workerOnly(t, tpl, "AWS::IAM::Role")
	require.Equal(t, getAtt(roleID, "Arn"), fn["Role"])
	require.Equal(t, map[string]bool{
		"sqs:ReceiveMessage": true, "sqs:ChangeMessageVisibility": true, "sqs:DeleteMessage": true,
		"sqs:GetQueueAttributes": true, "sqs:GetQueueUrl": true,
	}, tpl.AllowedActions(getAtt(mainID, "Arn")))
	require.Equal(t, map[string]bool{
		"sqs:SendMessage": true, "sqs:GetQueueAttributes": true, "sqs:GetQueueUrl": true,
	}, tpl.AllowedActions(getAtt(dlqID, "Arn")))
	// The idempotency table: exactly the store's item calls, on the records of its own kinds.
	require.Equal(t, map[string]bool{
		"dynamodb:GetItem": true, "dynamodb:PutItem": true, "dynamodb:UpdateItem": true, "dynamodb:DeleteItem": true,
	}, tpl.AllowedActions(getAtt(tableID, "Arn")))
	tableStmt := tableStatement(t, tpl, getAtt(tableID, "Arn"))
	require.Equal(t, map[string]any{"ForAllValues:StringLike": map[string]any{
		"dynamodb:LeadingKeys": []any{idempotency.NotRunKeyPrefix + "*", "email.send#*", "email.digest#*", "rate#partner-api", "rate#partner-api#*"},
	}}, tableStmt["Condition"])
	require.Equal(t, getAtt(tableID, "Arn"), tableStmt["Resource"], "the table only: no index, no stream")
	logActions := tpl.AllowedActions(getAtt(logID, "Arn"))
	require.Equal(t, map[string]bool{"logs:CreateLogStream": true, "logs:PutLogEvents": true}, logActions)
	requireNoWildcardGrant(t, tpl)
	require.Equal(t, "Worker", w.Name)
}

// tableStatement returns the one Allow statement on the table.
func tableStatement(t *testing.T, tpl template, tableArn any) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, st := range tpl.Statements() {
		if st["Effect"] == "Allow" && fmt.Sprint(st["Resource"]) == fmt.Sprint(tableArn) {
			found = append(found, st)
		}
	}
	require.Len(t, found, 1, "statements on the table")
	return found[0]
}

// Without Kinds the grant covers the whole table, and the synth says so.
func TestWorkerDefaultsOnFIFO(t *testing.T) {
	_, stack, _, _, _ := workerFixture(t, &JobQueueProps{FIFO: true}, WorkerProps{})
	tpl := synth(t, stack)
	tableID, _ := tpl.Only(t, "AWS::DynamoDB::Table")
	require.NotContains(t, tableStatement(t, tpl, getAtt(tableID, "Arn")), "Condition")
	warnings := assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("WorkerProps.Kinds is empty.*dynamodb:LeadingKeys")))
	require.Len(t, *warnings, 1)
	_, esm := workerOnly(t, tpl, "AWS::Lambda::EventSourceMapping")
	m := props(esm)
	require.Equal(t, []any{"ReportBatchItemFailures"}, m["FunctionResponseTypes"])
	require.Equal(t, float64(DefaultBatchSize), m["BatchSize"])
	require.NotContains(t, m, "MaximumBatchingWindowInSeconds", "FIFO has no batching window")
	require.NotContains(t, m, "ScalingConfig", "unset maximum concurrency")
	_, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	env := get(fnBody, "Properties.Environment.Variables").(map[string]any)
	require.Equal(t, "5", env[contract.EnvMaxAttempts])
	require.Equal(t, "63", env[contract.EnvMaxReceiveCount], "the queue's redrive maxReceiveCount: 10 × (5 + 1) + 3")
	require.Equal(t, "30", env[contract.EnvVisibilityTimeout])
	require.Equal(t, "10", env[contract.EnvConcurrency])
	require.Equal(t, "1s", env[contract.EnvBackoffBase])
	require.Equal(t, "15m0s", env[contract.EnvBackoffCap])
	require.Equal(t, float64(30), get(fnBody, "Properties.Timeout"))
}

// The guard: a queue visibility timeout shorter than the function timeout stops the synth.
func TestWorkerVisibilityTimeoutGuard(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Short", &JobQueueProps{VisibilityTimeout: 30 * time.Second})
	v := mustPanic(t, func() {
		NewWorker(stack, "TooLong", &WorkerProps{Source: helloSource, Queue: q, Timeout: 31 * time.Second})
	})
	err, ok := v.(error)
	require.True(t, ok, "panic value %T is an error", v)
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "Test/TooLong", ce.Construct)
	require.Contains(t, err.Error(), "visibility timeout of queue Short (30s) is shorter than the function timeout (31s)")
	require.Nil(t, stack.Node().TryFindChild(jsii.String("TooLong")), "nothing was defined")

	// Equal timeouts are accepted, as AWS accepts them.
	NewWorker(stack, "Fits", &WorkerProps{Source: helloSource, Queue: q, Timeout: 30 * time.Second})
	tpl := synth(t, stack)
	require.Len(t, tpl.Resources("AWS::Lambda::EventSourceMapping"), 2, "the worker's and its queue's redrive recorder's")
}

func TestWorkerRejectsBadProps(t *testing.T) {
	_, stack := newStack(t)
	std := NewJobQueue(stack, "Std", &JobQueueProps{VisibilityTimeout: 15 * time.Minute})
	fifo := NewJobQueue(stack, "Fifo", &JobQueueProps{FIFO: true, VisibilityTimeout: 15 * time.Minute})
	// 5 attempts and a margin of 20: 25 receives, enough for batches of 4 (4 × 6 + 1 = 25), not of 5 (31).
	tight := NewJobQueue(stack, "Tight", &JobQueueProps{FIFO: true, RedriveMargin: 20, VisibilityTimeout: 15 * time.Minute})
	cases := map[string]struct {
		props WorkerProps
		want  string
	}{
		"no queue":        {WorkerProps{Source: helloSource}, "Queue is required"},
		"no source":       {WorkerProps{Queue: std}, "Source (or Code) is required"},
		"no go.mod":       {WorkerProps{Queue: std, Source: GoSource{ModuleDir: ".", Package: "x"}}, "has no go.mod"},
		"timeout":         {WorkerProps{Queue: std, Source: helloSource, Timeout: 16 * time.Minute}, "between 1s and 15m"},
		"fifo batch":      {WorkerProps{Queue: fifo, Source: helloSource, BatchSize: 11}, "between 1 and 10 on FIFO"},
		"fifo window":     {WorkerProps{Queue: fifo, Source: helloSource, MaxBatchingWindow: time.Second}, "not supported on FIFO"},
		"fifo receives":   {WorkerProps{Queue: tight, Source: helloSource, BatchSize: 5}, "FIFO queue Tight redrives after 25 receives, but batches of 5 with 5 attempts need at least 31"},
		"big batch":       {WorkerProps{Queue: std, Source: helloSource, BatchSize: 100}, "needs a MaxBatchingWindow"},
		"window":          {WorkerProps{Queue: std, Source: helloSource, MaxBatchingWindow: 6 * time.Minute}, "MaxBatchingWindow"},
		"max concurrency": {WorkerProps{Queue: std, Source: helloSource, MaxConcurrency: 1}, "between 2 and 1000"},
		"reserved below":  {WorkerProps{Queue: std, Source: helloSource, MaxConcurrency: 10, ReservedConcurrency: 5}, "below MaxConcurrency 10"},
		"reserved < 0":    {WorkerProps{Queue: std, Source: helloSource, ReservedConcurrency: -1}, "must not be negative"},
		"backoff":         {WorkerProps{Queue: std, Source: helloSource, BackoffBase: time.Minute, BackoffCap: time.Second}, "base <= cap"},
		"backoff cap":     {WorkerProps{Queue: std, Source: helloSource, BackoffCap: 13 * time.Hour}, "12h"},
		"env":             {WorkerProps{Queue: std, Source: helloSource, Environment: map[string]string{contract.EnvMaxAttempts: "9"}}, "JOBKIT_ names"},
		"empty kind":      {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{""}}, "Kinds"},
		"wildcard kind":   {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{"email.*"}}, "Kinds"},
		"kind with #":     {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{"email#send"}}, "Kinds"},
		"kind job":        {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{"job"}}, "jobkit's own items"},
		"kind rate":       {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{"rate"}}, "jobkit's own items"},
		"kind jobkit":     {WorkerProps{Queue: std, Source: helloSource, Kinds: []string{"jobkit"}}, "jobkit's own items"},
		"limiter":         {WorkerProps{Queue: std, Source: helloSource, RateLimiters: []string{"api#1"}}, "RateLimiters"},
		"list no states":  {WorkerProps{Queue: std, Source: helloSource, ListJobs: true}, "ListJobs needs JobStates"},
	}
	NewWorker(stack, "Fits", &WorkerProps{Queue: tight, Source: helloSource, BatchSize: 4})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, configReason(t, func() { NewWorker(stack, "W", &tc.props) }), tc.want)
		})
	}
}

// The function's code is really compiled at synth by local bundling: the asset holds a stripped
// linux/arm64 executable named bootstrap.
func TestWorkerBundlesGoForArm64(t *testing.T) {
	app, stack, _, _, _ := workerFixture(t, nil, WorkerProps{})
	asm := app.Synth(nil)
	tplPath := filepath.Join(*asm.Directory(), *stack.TemplateFile())
	raw, err := os.ReadFile(tplPath)
	require.NoError(t, err)
	require.Contains(t, string(raw), "provided.al2023")

	tpl := synth(t, stack)
	_, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	assetPath, _ := get(fnBody, "Metadata.aws:asset:path").(string)
	if assetPath == "" {
		// Asset metadata is off outside the CDK CLI: find the asset by its S3 key (<hash>.zip).
		key, _ := get(fnBody, "Properties.Code.S3Key").(string)
		require.NotEmpty(t, key)
		assetPath = "asset." + strings.TrimSuffix(key, ".zip")
	}
	bootstrap := filepath.Join(*asm.Directory(), assetPath, "bootstrap")
	f, err := elf.Open(bootstrap)
	require.NoError(t, err, "the asset holds a built bootstrap")
	defer f.Close()
	require.Equal(t, elf.EM_AARCH64, f.Machine)
	require.Equal(t, elf.ELFCLASS64, f.Class)
	require.Nil(t, f.Section(".symtab"), "built with -ldflags=-s")
	info, err := os.Stat(bootstrap)
	require.NoError(t, err)
	require.NotZero(t, info.Mode()&0o111, "bootstrap is executable")
}

// A build error stops the synth with the compiler's message.
func TestWorkerBuildFailureStopsSynth(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Q", nil)
	v := mustPanic(t, func() {
		NewWorker(stack, "Broken", &WorkerProps{Queue: q, Source: GoSource{ModuleDir: "..", Package: "constructs/testdata/nosuchpkg"}})
	})
	require.Contains(t, strings.ToLower(toString(v)), "go build ./constructs/testdata/nosuchpkg")
}

// Ready-made code skips the build; the source still names the function in its metadata.
func TestWorkerWithPrebuiltCode(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("not really a binary"), 0o755))
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Q", nil)
	NewWorker(stack, "Pre", &WorkerProps{Queue: q, Code: awslambda.Code_FromAsset(jsii.String(dir), nil),
		RecorderCode: awslambda.Code_FromAsset(jsii.String(dir), nil), Source: GoSource{Package: "functions/email"}})
	tpl := synth(t, stack)
	_, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	require.Equal(t, "functions/email", get(fnBody, "Metadata."+SourceMetadataKey))
	require.NotContains(t, get(fnBody, "Properties.Environment.Variables"), contract.EnvIdempotencyTable)
}

// A worker in another stack than its queue (stateful resources apart) references it across stacks.
func TestWorkerAcrossStacks(t *testing.T) {
	app := newApp(t)
	state := awscdk.NewStack(app, jsii.String("State"), nil)
	workers := awscdk.NewStack(app, jsii.String("Workers"), nil)
	q := NewJobQueue(state, "Q", nil)
	table := NewIdempotencyTable(state, "T", nil)
	NewWorker(workers, "W", &WorkerProps{Queue: q, IdempotencyTable: table, Source: helloSource})
	tpl := synth(t, workers)
	_, esm := workerOnly(t, tpl, "AWS::Lambda::EventSourceMapping")
	require.Contains(t, get(esm, "Properties.EventSourceArn"), "Fn::ImportValue")
	require.Empty(t, tpl.Resources("AWS::SQS::Queue"))
	requireNoWildcardGrant(t, tpl)
	stateTpl := synth(t, state)
	require.Len(t, stateTpl.Resources("AWS::SQS::Queue"), 3, "the queue, its DLQ and its holding queue: in the queue's stack")
	require.Empty(t, stateTpl.Resources("AWS::IAM::Policy"), "grants live with the function's role")
}

// The asset hash is the hash of the built binary, and builds are reproducible: synthesizing the
// same source twice gives the same asset, so a deploy updates a function only when it changed.
func TestWorkerAssetHashIsStable(t *testing.T) {
	hash := func() string {
		_, stack, _, _, _ := workerFixture(t, nil, WorkerProps{})
		_, fn := workerOnly(t, synth(t, stack), "AWS::Lambda::Function")
		key, _ := get(fn, "Properties.Code.S3Key").(string)
		require.NotEmpty(t, key)
		return key
	}
	require.Equal(t, hash(), hash())
}

// JobStates: the state table is named in the environment, and the function may keep job states
// and batch counts on the "job#" and "batch#" items only.
func TestWorkerJobStates(t *testing.T) {
	_, stack, _, _, _ := workerFixture(t, nil, WorkerProps{Kinds: []string{"image.resize"}, JobStates: true})
	tpl := synth(t, stack)
	tableID, _ := tpl.Only(t, "AWS::DynamoDB::Table")
	var stateStmt map[string]any
	n := 0
	for _, st := range tpl.Statements() {
		if st["Effect"] == "Allow" && fmt.Sprint(st["Resource"]) == fmt.Sprint(getAtt(tableID, "Arn")) {
			n++
			if fmt.Sprint(st["Action"]) == fmt.Sprint(anySlice(JobStateActions)) {
				stateStmt = st
			}
		}
	}
	require.Equal(t, 3, n, "the idempotency grant and the job state grants of the worker and its queue's redrive recorder")
	require.NotNil(t, stateStmt, "a statement with exactly the JobStateActions")
	require.Equal(t, map[string]any{"ForAllValues:StringLike": map[string]any{
		"dynamodb:LeadingKeys": []any{"job#*", "batch#*"},
	}}, stateStmt["Condition"])
	_, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	env := get(fnBody, "Properties.Environment.Variables").(map[string]any)
	require.Equal(t, env[contract.EnvIdempotencyTable], env[contract.EnvStateTable])
	require.NotContains(t, env, contract.EnvListJobs, "listing by state is opt-in")
	requireNoWildcardGrant(t, tpl)
}

// ListJobs: the worker and its queue's redrive recorder list the jobs by state
// (JOBKIT_LIST_JOBS=1), with the job states' grants and no other.
func TestWorkerListJobs(t *testing.T) {
	_, stack, _, _, w := workerFixture(t, nil, WorkerProps{Kinds: []string{"image.resize"}, JobStates: true, ListJobs: true})
	tpl := synth(t, stack)
	_, fnBody := workerOnly(t, tpl, "AWS::Lambda::Function")
	require.Equal(t, "1", get(fnBody, "Properties.Environment.Variables").(map[string]any)[contract.EnvListJobs])
	rec := get(props(tpl["Resources"].(map[string]any)[logicalID(stack, w.Recorder.Function)].(map[string]any)), "Environment.Variables").(map[string]any)
	require.Equal(t, "1", rec[contract.EnvListJobs])
	require.NotEmpty(t, rec[contract.EnvStateTable])
	requireNoWildcardGrant(t, tpl)
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// A worker's function has an errors and a throttles alarm (sums over 5 minutes above 0), each
// with the props' alarm actions.
func TestWorkerAlarms(t *testing.T) {
	_, stack := newStack(t)
	topic := awssns.NewTopic(stack, jsii.String("Alarms"), nil)
	q := NewJobQueue(stack, "Jobs", nil)
	NewWorker(stack, "Worker", &WorkerProps{Source: helloSource, Queue: q,
		AlarmActions: []awscloudwatch.IAlarmAction{awscloudwatchactions.NewSnsAction(topic)}})
	tpl := synth(t, stack)
	topicID, _ := tpl.Only(t, "AWS::SNS::Topic")
	fnID, _ := workerOnly(t, tpl, "AWS::Lambda::Function")
	got := map[string]bool{}
	for id, body := range tpl.Resources("AWS::CloudWatch::Alarm") {
		p := props(body)
		if p["Namespace"] != "AWS/Lambda" {
			continue // the queue's alarms
		}
		require.Equal(t, []any{map[string]any{"Name": "FunctionName", "Value": ref(fnID)}}, p["Dimensions"], id)
		require.Equal(t, "Sum", p["Statistic"], id)
		require.Equal(t, float64(300), p["Period"], id)
		require.Equal(t, float64(0), p["Threshold"], id)
		require.Equal(t, "GreaterThanThreshold", p["ComparisonOperator"], id)
		require.Equal(t, []any{ref(topicID)}, p["AlarmActions"], id)
		got[p["MetricName"].(string)] = true
	}
	require.Equal(t, map[string]bool{"Errors": true, "Throttles": true}, got)
}
