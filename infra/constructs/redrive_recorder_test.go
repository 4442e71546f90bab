package constructs

import (
	"encoding/json"
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
	"github.com/jobkit-go/jobkit/jobs/contract"
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

// recorderFixture is a synthesized stack with a queue, a worker with job states and a payload
// bucket, and a batch callback queue granted through the worker.
type recorderFixture struct {
	stack                     awscdk.Stack
	tpl                       template
	q, done                   *JobQueue
	table                     *IdempotencyTable
	bucket                    *PayloadBucket
	w                         *Worker
	mainID, dlqID, movedID    string
	fnID, roleID, logID       string
	tableID, bucketID, doneID string
}

// The first worker of a queue gives it its redrive recorder: the queue's redrive policy targets
// a holding queue in the queue's construct, whose own redrive policy goes on to the DLQ after
// RecorderReceives more receives; a function built from RecorderPackage reads it, with the
// environment jobs.RecorderConfigFromEnv reads, metadata for the offline stack, and a role of its
// own that may consume the holding queue, send to the DLQ (and, granted with the worker's, to the
// batch callback queue), keep job states, read payloads and write its logs — nothing else.
func TestWorkerRedriveRecorder(t *testing.T) {
	app, stack := newStack(t)
	f := &recorderFixture{stack: stack}
	f.q = NewJobQueue(stack, "Jobs", &JobQueueProps{MaxAttempts: 4})
	f.done = NewJobQueue(stack, "Done", nil)
	f.table = NewIdempotencyTable(stack, "Idempotency", nil)
	f.bucket = NewPayloadBucket(stack, "Payloads", &PayloadBucketProps{Queues: []*JobQueue{f.q}})
	f.w = NewWorker(stack, "Worker", &WorkerProps{
		Source: helloSource, Queue: f.q, IdempotencyTable: f.table, JobStates: true, Kinds: []string{"image.resize"}, PayloadBucket: f.bucket,
	})
	f.w.GrantBatchCallbacks(f.done.Queue)
	requireNoNagErrors(t, app, stack)
	f.tpl = synth(t, stack)

	require.NotNil(t, f.w.Recorder)
	require.Same(t, f.w.Recorder, f.q.Recorder)
	require.Nil(t, f.done.Moved, "a queue no worker consumes keeps its plain redrive")
	require.Equal(t, 7, f.q.MaxReceiveCount)
	require.Equal(t, 7+RecorderReceives, f.q.MovedMaxReceiveCount)
	f.mainID, f.dlqID, f.movedID = logicalID(stack, f.q.Queue), logicalID(stack, f.q.DLQ), logicalID(stack, f.q.Moved)
	f.fnID, f.roleID, f.logID = logicalID(stack, f.w.Recorder.Function), logicalID(stack, f.w.Recorder.Role), logicalID(stack, f.w.Recorder.LogGroup)
	f.tableID, f.bucketID, f.doneID = logicalID(stack, f.table.Table), logicalID(stack, f.bucket.Bucket), logicalID(stack, f.done.Queue)

	t.Run("redrive chain", f.checkChain)
	t.Run("function", f.checkFunction)
	t.Run("grants", f.checkGrants)
}

// checkChain: queue → holding queue → DLQ; the holding queue encrypted, TLS only, keeping
// messages as long as the DLQ.
func (f *recorderFixture) checkChain(t *testing.T) {
	res := f.tpl["Resources"].(map[string]any)
	require.Equal(t, map[string]any{"deadLetterTargetArn": getAtt(f.movedID, "Arn"), "maxReceiveCount": float64(7)},
		get(res[f.mainID], "Properties.RedrivePolicy"))
	moved := props(res[f.movedID].(map[string]any))
	require.Equal(t, map[string]any{"deadLetterTargetArn": getAtt(f.dlqID, "Arn"), "maxReceiveCount": float64(17)}, moved["RedrivePolicy"])
	require.Equal(t, float64(DLQRetentionPeriod/time.Second), moved["MessageRetentionPeriod"])
	require.Equal(t, float64(RecorderTimeout/time.Second), moved["VisibilityTimeout"])
	require.Equal(t, true, moved["SqsManagedSseEnabled"])
	require.NotContains(t, moved, "FifoQueue")
	require.NotContains(t, moved, "QueueName", "no fixed resource names")
	tlsOnly := false
	for _, p := range f.tpl.Resources("AWS::SQS::QueuePolicy") {
		for _, qr := range get(p, "Properties.Queues").([]any) {
			if key(qr) == key(ref(f.movedID)) && get(p, "Properties.PolicyDocument.Statement.0.Condition.Bool.aws:SecureTransport") == "false" {
				tlsOnly = true
			}
		}
	}
	require.True(t, tlsOnly, "the holding queue refuses plain HTTP")
}

// checkFunction: built from RecorderPackage in the worker's module, named in its metadata, with
// the recorder's environment and an event source on the holding queue.
func (f *recorderFixture) checkFunction(t *testing.T) {
	fnBody := f.tpl["Resources"].(map[string]any)[f.fnID].(map[string]any)
	fn := props(fnBody)
	require.Equal(t, "provided.al2023", fn["Runtime"])
	require.Equal(t, []any{"arm64"}, fn["Architectures"])
	require.Equal(t, float64(RecorderTimeout/time.Second), fn["Timeout"])
	require.Equal(t, float64(RecorderMemorySize), fn["MemorySize"])
	require.Equal(t, getAtt(f.roleID, "Arn"), fn["Role"])
	require.Equal(t, ref(f.logID), get(fn, "LoggingConfig.LogGroup"))
	require.Equal(t, "JSON", get(fn, "LoggingConfig.LogFormat"))
	require.Equal(t, RecorderPackage, get(fnBody, "Metadata."+SourceMetadataKey))
	mod, _ := get(fnBody, "Metadata."+ModuleMetadataKey).(string)
	wantModule, err := filepath.Abs(helloSource.ModuleDir)
	require.NoError(t, err)
	require.Equal(t, wantModule, filepath.Join(*awscdk.Stage_Of(f.stack).Outdir(), filepath.FromSlash(mod)))
	require.Equal(t, map[string]any{
		contract.EnvQueueURL:        ref(f.mainID),
		contract.EnvDLQURL:          ref(f.dlqID),
		contract.EnvMaxReceiveCount: "7",
		contract.EnvWorkerName:      ref(logicalID(f.stack, f.w.Function)),
		contract.EnvStateTable:      ref(f.tableID),
		contract.EnvPayloadBucket:   ref(f.bucketID),
	}, get(fn, "Environment.Variables"))
	cfg, err := jobs.RecorderConfigFromEnv(func(k string) (string, bool) {
		v, ok := get(fn, "Environment.Variables."+k).(string)
		return v, ok
	})
	require.Error(t, err, "the URLs are references until deployed")
	require.Equal(t, 7, cfg.MaxReceiveCount)

	var mapping map[string]any
	for _, m := range f.tpl.Resources("AWS::Lambda::EventSourceMapping") {
		if key(get(m, "Properties.FunctionName")) == key(ref(f.fnID)) {
			mapping = props(m)
		}
	}
	require.NotNil(t, mapping)
	require.Equal(t, getAtt(f.movedID, "Arn"), mapping["EventSourceArn"])
	require.Equal(t, float64(RecorderBatchSize), mapping["BatchSize"])
	require.Equal(t, []any{"ReportBatchItemFailures"}, mapping["FunctionResponseTypes"])
	require.Equal(t, float64(RecorderMaxConcurrency), get(mapping, "ScalingConfig.MaximumConcurrency"))
}

// checkGrants: least privilege, exactly these grants on these resources.
func (f *recorderFixture) checkGrants(t *testing.T) {
	objects := queuePayloads(f.bucketID, f.mainID)
	jobStates := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"job#*", "batch#*"}}}
	send := set("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
	require.Equal(t, map[string]map[string]bool{
		key(getAtt(f.movedID, "Arn")):            set("sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"),
		key(getAtt(f.dlqID, "Arn")):              send,
		key(getAtt(f.doneID, "Arn")):             send,
		key(getAtt(f.tableID, "Arn"), jobStates): set(JobStateActions...),
		key(objects):                             set(PayloadReadActions...),
		key(getAtt(f.logID, "Arn")):              set("logs:CreateLogStream", "logs:PutLogEvents"),
	}, f.tpl.RoleGrants(f.roleID))
	require.Equal(t, send, f.tpl.RoleGrants(logicalID(f.stack, f.w.Role))[key(getAtt(f.doneID, "Arn"))], "the worker sends callbacks too")
	requireNoWildcardGrant(t, f.tpl)
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
	require.Equal(t, "Encoder", env[contract.EnvWorkerName])
	require.NotContains(t, env, contract.EnvStateTable)
	require.NotContains(t, env, contract.EnvPayloadBucket)
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
			require.Contains(t, configReason(t, func() { NewWorker(stack, "W", &tc.props) }), tc.want)
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
