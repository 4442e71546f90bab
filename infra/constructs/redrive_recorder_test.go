package constructs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
)

// logicalID returns the logical id of construct c's default resource in stack.
func logicalID(stack awscdk.Stack, c constructs.IConstruct) string {
	return *stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// key is a resource as RoleGrants keys it.
func key(resource any, condition ...any) string {
	b, _ := json.Marshal(resource)
	k := string(b)
	if len(condition) > 0 {
		c, _ := json.Marshal(condition[0])
		k += " if " + string(c)
	}
	return k
}

// helloCode is ready-made function code (a file named bootstrap).
func helloCode(t *testing.T) awslambda.Code {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("not really a binary"), 0o755))
	return awslambda.Code_FromAsset(jsii.String(dir), nil)
}

func set(actions ...string) map[string]bool {
	out := map[string]bool{}
	for _, a := range actions {
		out[a] = true
	}
	return out
}

// The first worker of a queue gives it its redrive recorder: the queue's redrive policy targets
// a holding queue in the queue's construct, whose own redrive policy goes on to the DLQ after
// RecorderReceives more receives; a function built from RecorderPackage reads it, with the
// environment jobs.RecorderConfigFromEnv reads, metadata for the offline stack, and a role of its
// own that may consume the holding queue, send to the DLQ (and, granted with the worker's, to the
// batch callback queue), keep job states, read payloads and write its logs — nothing else.
func TestWorkerRedriveRecorder(t *testing.T) {
	app, stack := newStack(t)
	q := NewJobQueue(stack, "Jobs", &JobQueueProps{MaxAttempts: 4})
	done := NewJobQueue(stack, "Done", nil)
	table := NewIdempotencyTable(stack, "Idempotency", nil)
	bucket := NewPayloadBucket(stack, "Payloads", &PayloadBucketProps{Queues: []*JobQueue{q}})
	w := NewWorker(stack, "Worker", &WorkerProps{
		Source: helloSource, Queue: q, IdempotencyTable: table, JobStates: true, Kinds: []string{"image.resize"}, PayloadBucket: bucket,
	})
	w.GrantBatchCallbacks(done.Queue)
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)

	require.NotNil(t, w.Recorder)
	require.Same(t, w.Recorder, q.Recorder)
	require.Nil(t, done.Moved, "a queue no worker consumes keeps its plain redrive")
	require.Equal(t, 7, q.MaxReceiveCount)
	require.Equal(t, 7+RecorderReceives, q.MovedMaxReceiveCount)
	mainID, dlqID, movedID := logicalID(stack, q.Queue), logicalID(stack, q.DLQ), logicalID(stack, q.Moved)
	fnID, roleID := logicalID(stack, w.Recorder.Function), logicalID(stack, w.Recorder.Role)
	logID, tableID := logicalID(stack, w.Recorder.LogGroup), logicalID(stack, table.Table)
	bucketID, doneID := logicalID(stack, bucket.Bucket), logicalID(stack, done.Queue)

	// The redrive chain: queue → holding queue → DLQ.
	res := tpl["Resources"].(map[string]any)
	require.Equal(t, map[string]any{"deadLetterTargetArn": getAtt(movedID, "Arn"), "maxReceiveCount": float64(7)},
		get(res[mainID], "Properties.RedrivePolicy"))
	moved := props(res[movedID].(map[string]any))
	require.Equal(t, map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(17)}, moved["RedrivePolicy"])
	require.Equal(t, float64(DLQRetentionPeriod/time.Second), moved["MessageRetentionPeriod"])
	require.Equal(t, float64(RecorderTimeout/time.Second), moved["VisibilityTimeout"])
	require.Equal(t, true, moved["SqsManagedSseEnabled"])
	require.NotContains(t, moved, "FifoQueue")
	require.NotContains(t, moved, "QueueName", "no fixed resource names")
	tlsOnly := false
	for _, p := range tpl.Resources("AWS::SQS::QueuePolicy") {
		for _, qr := range get(p, "Properties.Queues").([]any) {
			if key(qr) == key(ref(movedID)) && get(p, "Properties.PolicyDocument.Statement.0.Condition.Bool.aws:SecureTransport") == "false" {
				tlsOnly = true
			}
		}
	}
	require.True(t, tlsOnly, "the holding queue refuses plain HTTP")

	// The function: built from RecorderPackage in the worker's module, named in its metadata.
	fnBody := res[fnID].(map[string]any)
	fn := props(fnBody)
	require.Equal(t, "provided.al2023", fn["Runtime"])
	require.Equal(t, []any{"arm64"}, fn["Architectures"])
	require.Equal(t, float64(RecorderTimeout/time.Second), fn["Timeout"])
	require.Equal(t, float64(RecorderMemorySize), fn["MemorySize"])
	require.Equal(t, getAtt(roleID, "Arn"), fn["Role"])
	require.Equal(t, ref(logID), get(fn, "LoggingConfig.LogGroup"))
	require.Equal(t, "JSON", get(fn, "LoggingConfig.LogFormat"))
	require.Equal(t, RecorderPackage, get(fnBody, "Metadata."+SourceMetadataKey))
	mod, _ := get(fnBody, "Metadata."+ModuleMetadataKey).(string)
	wantModule, err := filepath.Abs(helloSource.ModuleDir)
	require.NoError(t, err)
	require.Equal(t, wantModule, filepath.Join(*awscdk.Stage_Of(stack).Outdir(), filepath.FromSlash(mod)))
	require.Equal(t, map[string]any{
		jobs.EnvQueueURL:        ref(mainID),
		jobs.EnvDLQURL:          ref(dlqID),
		jobs.EnvMaxReceiveCount: "7",
		jobs.EnvWorkerName:      ref(logicalID(stack, w.Function)),
		jobs.EnvStateTable:      ref(tableID),
		jobs.EnvPayloadBucket:   ref(bucketID),
	}, get(fn, "Environment.Variables"))
	cfg, err := jobs.RecorderConfigFromEnv(func(k string) (string, bool) {
		v, ok := get(fn, "Environment.Variables."+k).(string)
		return v, ok
	})
	require.Error(t, err, "the URLs are references until deployed")
	require.Equal(t, 7, cfg.MaxReceiveCount)

	// Its event source: the holding queue, with partial batch failures.
	var mapping map[string]any
	for _, m := range tpl.Resources("AWS::Lambda::EventSourceMapping") {
		if key(get(m, "Properties.FunctionName")) == key(ref(fnID)) {
			mapping = props(m)
		}
	}
	require.NotNil(t, mapping)
	require.Equal(t, getAtt(movedID, "Arn"), mapping["EventSourceArn"])
	require.Equal(t, float64(RecorderBatchSize), mapping["BatchSize"])
	require.Equal(t, []any{"ReportBatchItemFailures"}, mapping["FunctionResponseTypes"])
	require.Equal(t, float64(RecorderMaxConcurrency), get(mapping, "ScalingConfig.MaximumConcurrency"))

	// Least privilege: exactly these grants, on these resources.
	objects := map[string]any{"Fn::Join": []any{"", []any{getAtt(bucketID, "Arn"), "/*"}}}
	jobStates := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"job#*", "batch#*"}}}
	send := set("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
	require.Equal(t, map[string]map[string]bool{
		key(getAtt(movedID, "Arn")):            set("sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"),
		key(getAtt(dlqID, "Arn")):              send,
		key(getAtt(doneID, "Arn")):             send,
		key(getAtt(tableID, "Arn"), jobStates): set(JobStateActions...),
		key(objects):                           set(PayloadReadActions...),
		key(getAtt(logID, "Arn")):              set("logs:CreateLogStream", "logs:PutLogEvents"),
	}, tpl.RoleGrants(roleID))
	require.Equal(t, send, tpl.RoleGrants(logicalID(stack, w.Role))[key(getAtt(doneID, "Arn"))], "the worker sends callbacks too")
	requireNoWildcardGrant(t, tpl)
}

// One recorder per queue: a second worker of the queue adds none. A FIFO queue's holding queue is
// FIFO too, deduplicating by id only (the recorder sets it), and counts on from the queue's 63.
func TestRedriveRecorderOnePerQueueOnFIFO(t *testing.T) {
	app, stack := newStack(t)
	q := NewJobQueue(stack, "Ledger", &JobQueueProps{FIFO: true, ContentBasedDeduplication: true})
	first := NewWorker(stack, "First", &WorkerProps{Source: helloSource, Queue: q})
	second := NewWorker(stack, "Second", &WorkerProps{Source: helloSource, Queue: q})
	requireNoNagErrors(t, app, stack)
	tpl := synth(t, stack)
	require.NotNil(t, first.Recorder)
	require.Nil(t, second.Recorder)
	require.Same(t, first.Recorder, q.Recorder)
	require.Len(t, tpl.Resources("AWS::Lambda::Function"), 3, "two workers and one recorder")
	require.Len(t, tpl.Resources("AWS::SQS::Queue"), 3, "the queue, its DLQ and one holding queue")
	moved := props(tpl["Resources"].(map[string]any)[logicalID(stack, q.Moved)].(map[string]any))
	require.Equal(t, true, moved["FifoQueue"])
	require.Equal(t, false, moved["ContentBasedDeduplication"])
	require.Equal(t, float64(63+RecorderReceives), get(moved, "RedrivePolicy.maxReceiveCount"))
}

// A ContainerWorker gives its queue a recorder too, naming the container worker; it keeps no job
// states (a container worker has none).
func TestContainerWorkerRedriveRecorder(t *testing.T) {
	_, stack := newStack(t)
	q := NewJobQueue(stack, "Long", &JobQueueProps{VisibilityTimeout: 5 * time.Minute})
	w := NewContainerWorker(stack, "Encoder", &ContainerWorkerProps{Source: helloSource, Queue: q})
	tpl := synth(t, stack)
	require.NotNil(t, w.Recorder)
	env := get(props(tpl["Resources"].(map[string]any)[logicalID(stack, w.Recorder.Function)].(map[string]any)), "Environment.Variables").(map[string]any)
	require.Equal(t, "Encoder", env[jobs.EnvWorkerName])
	require.NotContains(t, env, jobs.EnvStateTable)
	require.NotContains(t, env, jobs.EnvPayloadBucket)
}

// What a recorder cannot be built or sized for stops the synth: a redrive whose receives leave the
// holding queue no room under SQS's 1000, ready-made worker code with no module to build it from.
func TestRedriveRecorderConfigErrors(t *testing.T) {
	_, stack := newStack(t)
	deep := NewJobQueue(stack, "Deep", &JobQueueProps{MaxAttempts: 990, RedriveMargin: 5})
	q := NewJobQueue(stack, "Q", nil)
	for name, tc := range map[string]struct {
		props WorkerProps
		want  string
	}{
		"receives": {WorkerProps{Queue: deep, Source: helloSource}, "queue Deep redrives after 995 receives: its holding queue's redrive"},
		"module":   {WorkerProps{Queue: q, Code: helloCode(t), Source: GoSource{Package: "functions/email"}}, "set Source.ModuleDir (or RecorderCode)"},
	} {
		t.Run(name, func(t *testing.T) {
			v := mustPanic(t, func() { NewWorker(stack, "W", &tc.props) })
			var ce *ConfigError
			require.True(t, errors.As(v.(error), &ce), "panic value %v", v)
			require.Contains(t, ce.Reason, tc.want)
		})
	}
	v := mustPanic(t, func() { NewContainerWorker(stack, "C", &ContainerWorkerProps{Queue: deep, Source: helloSource}) })
	require.Contains(t, toString(v), "RecorderReceives")
}

// A GoSource's Package may be an import path (its first element holds a dot), built by that path
// in ModuleDir; a folder is built as ./<folder>.
func TestGoSourceImportPath(t *testing.T) {
	rec := GoSource{ModuleDir: "..", Package: RecorderPackage}
	require.True(t, rec.IsImportPath())
	require.NoError(t, rec.validate())
	require.Equal(t, RecorderPackage, rec.pkgArg())
	require.False(t, helloSource.IsImportPath())
	require.Equal(t, "./constructs/testdata/hello", helloSource.pkgArg())
	require.False(t, GoSource{Package: "./x.y/z"}.IsImportPath())
	require.ErrorContains(t, GoSource{ModuleDir: "..", Package: "example.com/a/../b"}.validate(), "not a clean import path")
}
