package constructs

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Actions of the claim check: producers put payloads, workers read them and delete them after
// success (package jobs, Payloads).
var (
	PayloadPutActions    = []string{"s3:PutObject"}
	PayloadWorkerActions = []string{"s3:GetObject", "s3:DeleteObject"}
)

// OutputPayloadBucketPrefix prefixes the output naming a PayloadBucket (package jobs owns it).
const OutputPayloadBucketPrefix = contract.OutputPayloadBucketPrefix

// PayloadExpirySlack is added to what a PayloadBucket's objects must outlive (see
// PayloadBucketProps.Queues): a day, S3's lifecycle unit.
const PayloadExpirySlack = 24 * time.Hour

// PayloadBucketProps configures a PayloadBucket.
type PayloadBucketProps struct {
	// Queues are the JobQueues whose jobs may be stored in the bucket (required). The objects
	// expire after the longest time a job of theirs can still need its payload: twice the
	// queue's retention plus its dead-letter queue's — in the queue, in the DLQ, and in the
	// queue again after a redrive — plus PayloadExpirySlack, in whole days.
	Queues []*JobQueue
}

// PayloadBucket is the S3 bucket of claim-checked job payloads (jobs bigger than an SQS message,
// stored by the jobs Client's Payloads): S3-managed encryption, public access blocked, TLS-only
// bucket policy, objects expiring after Expiry (incomplete uploads after a day), retained when
// the stack is deleted. Workers given it (WorkerProps.PayloadBucket) read and delete payloads;
// producers need GrantPut. It outputs its name as JobkitPayloadBucket<Name>.
//
// Server access logging is off, with the cdk-nag rule AwsSolutions-S1 suppressed and the reason
// given: objects are job bodies read once and deleted by the workers, whose logs name each
// object they read (payload_key); a log bucket would duplicate every job's key for no reader.
type PayloadBucket struct {
	constructs.Construct

	Name   string
	Bucket awss3.Bucket
	// Expiry is how long an object lives; it covers every queue of the props.
	Expiry time.Duration
}

// PayloadExpiry returns how long payloads of q's jobs must live: twice its retention plus its
// dead-letter queue's, plus PayloadExpirySlack, rounded up to whole days.
func PayloadExpiry(q *JobQueue) time.Duration {
	d := 2*q.RetentionPeriod + DLQRetentionPeriod + PayloadExpirySlack
	const day = 24 * time.Hour
	return (d + day - 1) / day * day
}

// NewPayloadBucket defines a PayloadBucket. It panics without Queues.
func NewPayloadBucket(scope constructs.Construct, id string, props *PayloadBucketProps) *PayloadBucket {
	if props == nil || len(props.Queues) == 0 {
		panic(fmt.Sprintf("jobkit: PayloadBucket %q: PayloadBucketProps.Queues is required (the expiry is derived from their retention)", id))
	}
	if !namePattern.MatchString(id) {
		panic(fmt.Sprintf("jobkit: PayloadBucket %q: id must be alphanumeric and start with a letter (it names the output %s<id>)", id, OutputPayloadBucketPrefix))
	}
	b := &PayloadBucket{Construct: constructs.NewConstruct(scope, jsii.String(id)), Name: id}
	for _, q := range props.Queues {
		b.Expiry = max(b.Expiry, PayloadExpiry(q))
	}
	b.Bucket = awss3.NewBucket(b.Construct, jsii.String("Bucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("jobkit-payload-expiry"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(b.Expiry.Hours() / 24)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(b.Bucket, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("Job payloads are read once and deleted by the workers, whose log lines name each object (payload_key); " +
			"server access logs would copy every job's key into a second bucket with no reader. CloudTrail data events can audit it if required."),
	}}, jsii.Bool(true))
	out := awscdk.NewCfnOutput(b.Construct, jsii.String("BucketName"), &awscdk.CfnOutputProps{
		Value:       b.Bucket.BucketName(),
		Description: jsii.String(fmt.Sprintf("jobkit %s payload bucket (claim-checked jobs)", id)),
	})
	out.OverrideLogicalId(jsii.String(OutputPayloadBucketPrefix + id))
	return b
}

// GrantPut lets a producer store payloads (PayloadPutActions): for the jobs of queues only, when
// given, else of any queue.
func (b *PayloadBucket) GrantPut(role awsiam.IRole, queues ...*JobQueue) {
	if len(queues) == 0 {
		b.grant(role, PayloadPutActions, nil)
	}
	for _, q := range queues {
		b.grant(role, PayloadPutActions, q)
	}
}

// grantWorker lets a worker of q read and delete q's payloads (PayloadWorkerActions on the
// objects under q's prefix).
func (b *PayloadBucket) grantWorker(role awsiam.IRole, q *JobQueue) {
	b.grant(role, PayloadWorkerActions, q)
}

// grant allows actions on the bucket's objects to role: with q, only on q's payloads (the objects
// under contract.PayloadKeyPrefix of its queue name); without, on every object. The keys are new
// ULIDs, so the resource ends in a wildcard; the cdk-nag IAM5 finding for it is suppressed on the
// role with the reason.
func (b *PayloadBucket) grant(role awsiam.IRole, actions []string, q *JobQueue) {
	objects := "*"
	if q != nil {
		objects = contract.PayloadKeyPrefix(*q.Queue.QueueName()) + "*"
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: jsii.Strings(*b.Bucket.ArnForObjects(jsii.String(objects))),
	}))
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("Claim-checked job payloads have a new ULID key each: the grant covers the objects of the jobkit " +
			"payload bucket only (a worker's: its own queue's key prefix), with exact actions (" + fmt.Sprint(actions) + ")."),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::.*\/\*$/`)}},
	}}, jsii.Bool(true))
}

// covers reports why b's objects may expire while a job of q still needs its payload, or "".
func (b *PayloadBucket) covers(q *JobQueue) string {
	if need := PayloadExpiry(q); b.Expiry < need {
		return fmt.Sprintf("payload bucket %s expires objects after %s, but jobs of queue %s may need theirs for %s; "+
			"list the queue in PayloadBucketProps.Queues", b.Name, b.Expiry, q.Name, need)
	}
	return ""
}
