package constructs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The payload bucket: SSE, public access blocked, TLS only, objects expiring after the longest
// time a job of its queues can need its payload; a worker given it reads and deletes objects
// (not puts), knows its name, and refuses a bucket whose expiry does not cover its queue. No
// cdk-nag AwsSolutions error.
func TestPayloadBucket(t *testing.T) {
	app, stack := newStack(t)
	short := NewJobQueue(stack, "Short", nil)                                                // 4 d retention
	long := NewJobQueue(stack, "Long", &JobQueueProps{RetentionPeriod: 10 * 24 * time.Hour}) // 10 d
	b := NewPayloadBucket(stack, "Jobs", &PayloadBucketProps{Queues: []*JobQueue{short, long}})
	require.Equal(t, 23*24*time.Hour, PayloadExpiry(short), "2×4 d + 14 d + 1 d")
	require.Equal(t, 35*24*time.Hour, b.Expiry, "2×10 d + 14 d + 1 d: the longest queue's")
	w := NewWorker(stack, "Worker", &WorkerProps{Source: helloSource, Queue: long, PayloadBucket: b})
	require.Equal(t, *b.Bucket.BucketName(), w.Environment[contract.EnvPayloadBucket])

	other := NewJobQueue(stack, "Other", &JobQueueProps{RetentionPeriod: 14 * 24 * time.Hour})
	v := mustPanic(t, func() {
		NewWorker(stack, "Uncovered", &WorkerProps{Source: helloSource, Queue: other, PayloadBucket: b})
	})
	require.Contains(t, toString(v), "list the queue in PayloadBucketProps.Queues")
	mustPanic(t, func() { NewPayloadBucket(stack, "Empty", &PayloadBucketProps{}) })

	tpl := synth(t, stack)
	bucketID, body := tpl.Only(t, "AWS::S3::Bucket")
	p := props(body)
	require.Equal(t, "AES256", get(p, "BucketEncryption.ServerSideEncryptionConfiguration.0.ServerSideEncryptionByDefault.SSEAlgorithm"))
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		require.Equal(t, true, get(p, "PublicAccessBlockConfiguration."+k), k)
	}
	require.Equal(t, float64(35), get(p, "LifecycleConfiguration.Rules.0.ExpirationInDays"))
	require.Equal(t, float64(1), get(p, "LifecycleConfiguration.Rules.0.AbortIncompleteMultipartUpload.DaysAfterInitiation"))
	require.NotContains(t, p, "BucketName", "no fixed resource names")
	require.Equal(t, "Retain", body["DeletionPolicy"])

	_, policy := tpl.Only(t, "AWS::S3::BucketPolicy")
	st := get(props(policy), "PolicyDocument.Statement.0").(map[string]any)
	require.Equal(t, "Deny", st["Effect"])
	require.Equal(t, "false", get(st, "Condition.Bool.aws:SecureTransport"), "TLS only")

	// A worker's grant covers its own queue's payloads only: the keys under its queue's name.
	objects := queuePayloads(bucketID, logicalID(stack, long.Queue))
	require.Equal(t, map[string]bool{"s3:GetObject": true, "s3:DeleteObject": true}, tpl.AllowedActions(objects))
	require.Empty(t, tpl.AllowedActions(map[string]any{"Fn::Join": []any{"", []any{getAtt(bucketID, "Arn"), "/*"}}}), "nothing on the whole bucket")
	_, fn := workerOnly(t, tpl, "AWS::Lambda::Function")
	require.Equal(t, ref(bucketID), get(props(fn), "Environment.Variables."+contract.EnvPayloadBucket))
	require.Equal(t, ref(bucketID), get(tpl["Outputs"], OutputPayloadBucketPrefix+"Jobs.Value"))
	requireNoWildcardGrant(t, tpl)
	requireNoNagErrors(t, app, stack)
}

// queuePayloads is the resource of a grant on the payloads of the queue queueID in bucketID:
// contract.PayloadKeyPrefix of its name, then any key.
func queuePayloads(bucketID, queueID string) map[string]any {
	return map[string]any{"Fn::Join": []any{"", []any{getAtt(bucketID, "Arn"), "/", getAtt(queueID, "QueueName"), "/*"}}}
}
