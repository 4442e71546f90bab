package constructs

import (
	"cmp"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Defaults of JobQueueProps. MaxAttempts and VisibilityTimeout are the jobs runtime's defaults
// (package jobs owns them), so a queue and a worker left at their defaults agree.
const (
	DefaultMaxAttempts       = contract.DefaultMaxAttempts
	DefaultVisibilityTimeout = contract.DefaultVisibilityTimeout
	DefaultRetentionPeriod   = 4 * 24 * time.Hour  // SQS's default
	DefaultAgeAlarmThreshold = time.Hour           // above the default backoff's worst case
	DLQRetentionPeriod       = 14 * 24 * time.Hour // the SQS maximum, for every DLQ
	// DefaultRedriveMargin is the redrive margin of a Standard queue; a FIFO queue's default is
	// sized for batches of MaxFIFOBatchSize (see JobQueueProps.RedriveMargin).
	DefaultRedriveMargin = 3
	// MaxFIFOBatchSize is the most records of a FIFO batch: an event source mapping's BatchSize
	// on a FIFO queue, and what a container worker receives at once.
	MaxFIFOBatchSize = 10
	// MaxMaxReceiveCount is SQS's upper bound of a redrive policy's maxReceiveCount.
	MaxMaxReceiveCount = 1000
)

// Output key prefixes: a JobQueue named N exports its queue URL as JobkitQueue<N> and its
// dead-letter queue URL as JobkitDlq<N>, in the stack that holds it. The Inspector (and so the
// CLI) finds the queues by them: package inspect owns the names.
const (
	OutputQueuePrefix = contract.OutputQueuePrefix
	OutputDLQPrefix   = contract.OutputDLQPrefix
)

// JobQueueProps configures a JobQueue. The zero value is a Standard queue with the defaults above.
type JobQueueProps struct {
	// FIFO makes the queue (and its dead-letter queue) a FIFO queue: jobs of one message group
	// run one at a time, in order.
	FIFO bool
	// ContentBasedDeduplication lets SQS deduplicate FIFO messages by a hash of the body when the
	// producer sets no deduplication id. FIFO only.
	ContentBasedDeduplication bool
	// HighThroughputFIFO scopes deduplication and throughput to the message group (FIFO high
	// throughput mode). FIFO only.
	HighThroughputFIFO bool

	// MaxAttempts is how many times a job runs before the jobs runtime dead-letters it
	// (JOBKIT_MAX_ATTEMPTS of the workers consuming the queue). Default DefaultMaxAttempts.
	MaxAttempts int
	// RedriveMargin is added to MaxAttempts to give the redrive policy's maxReceiveCount.
	//
	// The runtime dead-letters a job itself when its last attempt fails, with the error and
	// attempt count attached, so SQS's redrive must not move a message first. The redrive is
	// only the safety net for receives that never reach the runtime as an attempt: a crash, an
	// out-of-memory kill or a timeout of the whole invocation returns every record of the batch,
	// and on a FIFO queue each record behind a failed one in its message group is returned
	// without running. Without the margin, such receives would let SQS move a job that was not
	// run MaxAttempts times, without the runtime's failure attributes. With it, a poison pill that
	// kills the process still reaches the DLQ after MaxAttempts+RedriveMargin receives.
	//
	// On a FIFO queue, each job of a batch ahead of a job in its message group costs it a receive
	// per run that fails or dies: with batches of B records, contract.MinFIFOMaxReceiveCount(B,
	// MaxAttempts) = B·(MaxAttempts+1)+1 receives let every job make its attempts before it can
	// be dead-lettered, and the Worker and ContainerWorker constructs refuse a FIFO queue with
	// fewer at synth.
	//
	// Default DefaultRedriveMargin on a Standard queue; on a FIFO queue, what makes
	// maxReceiveCount MaxFIFOBatchSize·(MaxAttempts+1)+DefaultRedriveMargin (63 for 5 attempts),
	// at most MaxMaxReceiveCount.
	RedriveMargin int
	// VisibilityTimeout is the queue's visibility timeout. It must be at least the timeout of
	// every Worker consuming the queue (AWS refuses the event source mapping otherwise; the
	// Worker construct checks it at synth). Default DefaultVisibilityTimeout.
	VisibilityTimeout time.Duration
	// RetentionPeriod is how long a message may wait in the queue. Default
	// DefaultRetentionPeriod. The dead-letter queue always keeps messages DLQRetentionPeriod.
	RetentionPeriod time.Duration

	// AgeAlarmThreshold is the age of the oldest message above which the age alarm fires.
	// Default DefaultAgeAlarmThreshold.
	AgeAlarmThreshold time.Duration
	// AlarmActions are added to both alarms (e.g. an SNS topic action). Optional.
	AlarmActions []awscloudwatch.IAlarmAction
}

// JobQueue is an SQS queue for jobs with its dead-letter queue: SQS-managed encryption at rest,
// TLS enforced by the queue policies, a redrive policy derived from MaxAttempts, an alarm when
// the dead-letter queue holds any message and an alarm when the oldest message is too old.
// It outputs the queue URLs as JobkitQueue<Name> and JobkitDlq<Name>. Once a Worker or
// ContainerWorker consumes it, its redrive policy targets a holding queue of its own (Moved)
// instead, read by that worker's RedriveRecorder, which sends each job on to the dead-letter queue
// recorded as a job.
type JobQueue struct {
	constructs.Construct

	// Name is the construct id, used in output keys, alarm descriptions and dashboards.
	Name string
	// Queue is the job queue; DLQ its dead-letter queue.
	Queue awssqs.Queue
	DLQ   awssqs.Queue

	FIFO bool
	// ContentBasedDeduplication: SQS deduplicates by the body when a sender gives no
	// deduplication id, as EventBridge Scheduler never does (FIFO only).
	ContentBasedDeduplication bool
	MaxAttempts               int
	MaxReceiveCount           int
	VisibilityTimeout         time.Duration
	RetentionPeriod           time.Duration // of the queue; its DLQ keeps messages DLQRetentionPeriod

	// DLQDepthAlarm fires when the dead-letter queue holds a message; AgeAlarm when the queue's
	// oldest message is older than AgeAlarmThreshold.
	DLQDepthAlarm awscloudwatch.Alarm
	AgeAlarm      awscloudwatch.Alarm

	// Moved is the holding queue of the jobs the queue's redrive policy moves — received
	// MaxReceiveCount times with no outcome reported, as when the function fails before it
	// reaches the runtime — defined, in this construct, when the first Worker or ContainerWorker
	// consumes the queue; nil before. The redrive policy then targets Moved instead of DLQ, and
	// that worker's RedriveRecorder reads Moved: it records each job dead and sends it on to DLQ.
	// Moved's own redrive policy moves to DLQ what the recorder could not take, so nothing stays
	// in it. A queue no jobkit worker consumes has no holding queue: its redrive policy targets
	// DLQ, as nothing would read Moved.
	Moved awssqs.Queue
	// MovedMaxReceiveCount is Moved's redrive maxReceiveCount: MaxReceiveCount + RecorderReceives.
	// SQS counts a message's receives on from the queue it came from, so the recorder gets
	// RecorderReceives tries.
	MovedMaxReceiveCount int
	// Recorder is the RedriveRecorder reading Moved; nil until a worker defines it.
	Recorder *RedriveRecorder
}

var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)

// NewJobQueue defines a JobQueue. id must be alphanumeric (it names the outputs). It panics on
// props that cannot describe a queue: a negative or out-of-range value, FIFO-only settings on a
// Standard queue.
func NewJobQueue(scope constructs.Construct, id string, props *JobQueueProps) *JobQueue {
	p := JobQueueProps{}
	if props != nil {
		p = *props
	}
	p = p.withDefaults()
	if err := p.validate(id); err != nil {
		panic(fmt.Sprintf("jobkit: JobQueue %q: %v", id, err))
	}

	c := constructs.NewConstruct(scope, jsii.String(id))
	q := &JobQueue{
		Construct:                 c,
		Name:                      id,
		FIFO:                      p.FIFO,
		MaxAttempts:               p.MaxAttempts,
		ContentBasedDeduplication: p.ContentBasedDeduplication,
		MaxReceiveCount:           p.MaxAttempts + p.RedriveMargin,
		VisibilityTimeout:         p.VisibilityTimeout,
		RetentionPeriod:           p.RetentionPeriod,
	}
	q.DLQ = awssqs.NewQueue(c, jsii.String("DLQ"), p.dlqProps())
	q.Queue = awssqs.NewQueue(c, jsii.String("Queue"), p.queueProps(q.DLQ, q.MaxReceiveCount))
	q.addAlarms(p)
	q.addOutputs()
	jobQueues.Store(*q.Queue.Node().Addr(), q)
	return q
}

// jobQueues holds every JobQueue defined, by its SQS queue's construct address.
var jobQueues sync.Map

// jobQueueOf returns the JobQueue whose SQS queue q is, or nil for a queue defined otherwise.
func jobQueueOf(q awssqs.IQueue) *JobQueue {
	if jq, ok := jobQueues.Load(*q.Node().Addr()); ok {
		return jq.(*JobQueue)
	}
	return nil
}

// needsSchedulerDedup returns why EventBridge Scheduler could not deliver to q — a FIFO queue
// without content-based deduplication, since Scheduler sends no deduplication id — or "". It
// knows a JobQueue's props and a queue defined in the app (its CfnQueue); an imported queue's
// deduplication cannot be read at synth, and it passes.
func needsSchedulerDedup(q awssqs.IQueue) string {
	const why = "has no content-based deduplication, and EventBridge Scheduler sends no deduplication id: " +
		"SQS would refuse every job Scheduler delivers; set "
	if jq := jobQueueOf(q); jq != nil {
		if jq.FIFO && !jq.ContentBasedDeduplication {
			return fmt.Sprintf("FIFO queue %s %sJobQueueProps.ContentBasedDeduplication", jq.Name, why)
		}
		return ""
	}
	if q.Fifo() == nil || !*q.Fifo() {
		return ""
	}
	cfn, ok := q.Node().DefaultChild().(awssqs.CfnQueue)
	if !ok {
		return "" // imported: its attributes are not in this app
	}
	switch on := cfn.ContentBasedDeduplication().(type) {
	case bool:
		if on {
			return ""
		}
	case *bool:
		if on != nil && *on {
			return ""
		}
	}
	return fmt.Sprintf("FIFO queue %s %sContentBasedDeduplication on it", *q.Node().Path(), why)
}

// dlqProps describes the dead-letter queue: encrypted, TLS only, the longest retention.
func (p JobQueueProps) dlqProps() *awssqs.QueueProps {
	dlq := &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: cdkDuration(DLQRetentionPeriod),
	}
	if p.FIFO {
		dlq.Fifo = jsii.Bool(true)
		// Jobs reach the DLQ from the runtime (one send per job) or from the redrive; neither
		// must be dropped as a duplicate of an earlier dead job with the same body.
		dlq.ContentBasedDeduplication = jsii.Bool(false)
	}
	return dlq
}

// queueProps describes the job queue: encrypted, TLS only, redriving to dlq after
// maxReceiveCount receives.
func (p JobQueueProps) queueProps(dlq awssqs.IQueue, maxReceiveCount int) *awssqs.QueueProps {
	queue := &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: cdkDuration(p.VisibilityTimeout),
		RetentionPeriod:   cdkDuration(p.RetentionPeriod),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           dlq,
			MaxReceiveCount: jsii.Number(maxReceiveCount),
		},
	}
	if p.FIFO {
		queue.Fifo = jsii.Bool(true)
		queue.ContentBasedDeduplication = jsii.Bool(p.ContentBasedDeduplication)
		if p.HighThroughputFIFO {
			queue.DeduplicationScope = awssqs.DeduplicationScope_MESSAGE_GROUP
			queue.FifoThroughputLimit = awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID
		}
	}
	return queue
}

// holdMoved defines the holding queue Moved, once, and points the queue's redrive policy at it
// (see Moved): encrypted, TLS only, of the queue's type, keeping messages DLQRetentionPeriod (the
// DLQ's, as a Standard message's expiry counts from its first send), with the recorder's timeout
// as its visibility timeout, and a redrive to DLQ after MovedMaxReceiveCount receives.
func (q *JobQueue) holdMoved() awssqs.Queue {
	if q.Moved != nil {
		return q.Moved
	}
	q.MovedMaxReceiveCount = min(q.MaxReceiveCount+RecorderReceives, MaxMaxReceiveCount)
	props := &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RetentionPeriod:   cdkDuration(DLQRetentionPeriod),
		VisibilityTimeout: cdkDuration(RecorderTimeout),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: q.DLQ, MaxReceiveCount: jsii.Number(q.MovedMaxReceiveCount)},
	}
	if q.FIFO {
		props.Fifo = jsii.Bool(true)
		props.ContentBasedDeduplication = jsii.Bool(false)
	}
	q.Moved = awssqs.NewQueue(q.Construct, jsii.String("Moved"), props)
	cfn := q.Queue.Node().DefaultChild().(awssqs.CfnQueue)
	cfn.SetRedrivePolicy(map[string]any{"deadLetterTargetArn": q.Moved.QueueArn(), "maxReceiveCount": q.MaxReceiveCount})
	return q.Moved
}

// addAlarms defines the dead-letter depth alarm and the oldest-message age alarm, with the
// props' alarm actions.
func (q *JobQueue) addAlarms(p JobQueueProps) {
	q.DLQDepthAlarm = newAlarm(q.Construct, "DLQDepthAlarm", fmt.Sprintf("jobkit %s: the dead-letter queue holds jobs that failed permanently", q.Name),
		q.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(1)),
			Statistic: jsii.String("Maximum"),
		}), 0, p.AlarmActions)
	q.AgeAlarm = newAlarm(q.Construct, "AgeAlarm", fmt.Sprintf("jobkit %s: the oldest job has waited more than %s", q.Name, p.AgeAlarmThreshold),
		q.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Maximum"),
		}), p.AgeAlarmThreshold.Seconds(), p.AlarmActions)
}

// addOutputs exports the queue URLs as OutputQueuePrefix<Name> and OutputDLQPrefix<Name>.
func (q *JobQueue) addOutputs() {
	out := awscdk.NewCfnOutput(q.Construct, jsii.String("QueueUrl"), &awscdk.CfnOutputProps{
		Value:       q.Queue.QueueUrl(),
		Description: jsii.String(fmt.Sprintf("jobkit %s queue URL", q.Name)),
	})
	out.OverrideLogicalId(jsii.String(OutputQueuePrefix + q.Name))
	out = awscdk.NewCfnOutput(q.Construct, jsii.String("DLQUrl"), &awscdk.CfnOutputProps{
		Value:       q.DLQ.QueueUrl(),
		Description: jsii.String(fmt.Sprintf("jobkit %s dead-letter queue URL", q.Name)),
	})
	out.OverrideLogicalId(jsii.String(OutputDLQPrefix + q.Name))
}

func (p JobQueueProps) withDefaults() JobQueueProps {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, DefaultMaxAttempts)
	if p.RedriveMargin == 0 {
		p.RedriveMargin = DefaultRedriveMargin
		if p.FIFO {
			n := min(MaxFIFOBatchSize*(p.MaxAttempts+1)+DefaultRedriveMargin, MaxMaxReceiveCount)
			p.RedriveMargin = max(n-p.MaxAttempts, 0)
		}
	}
	p.VisibilityTimeout = cmp.Or(p.VisibilityTimeout, DefaultVisibilityTimeout)
	p.RetentionPeriod = cmp.Or(p.RetentionPeriod, DefaultRetentionPeriod)
	p.AgeAlarmThreshold = cmp.Or(p.AgeAlarmThreshold, DefaultAgeAlarmThreshold)
	return p
}

func (p JobQueueProps) validate(id string) error {
	if !namePattern.MatchString(id) {
		return fmt.Errorf("id must be alphanumeric and start with a letter (it names the outputs %s<id> and %s<id>)", OutputQueuePrefix, OutputDLQPrefix)
	}
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("MaxAttempts %d must be at least 1", p.MaxAttempts)
	case p.RedriveMargin < 0:
		return fmt.Errorf("RedriveMargin %d must not be negative", p.RedriveMargin)
	case p.MaxAttempts+p.RedriveMargin > MaxMaxReceiveCount:
		return fmt.Errorf("MaxAttempts+RedriveMargin = %d exceeds the redrive policy's maximum of %d", p.MaxAttempts+p.RedriveMargin, MaxMaxReceiveCount)
	case p.VisibilityTimeout < 0 || p.VisibilityTimeout > jobs.MaxVisibility || p.VisibilityTimeout%time.Second != 0:
		return fmt.Errorf("VisibilityTimeout %s must be whole seconds between 0 and %s", p.VisibilityTimeout, jobs.MaxVisibility)
	case p.RetentionPeriod < time.Minute || p.RetentionPeriod > DLQRetentionPeriod || p.RetentionPeriod%time.Second != 0:
		return fmt.Errorf("RetentionPeriod %s must be whole seconds between 1m and 14d", p.RetentionPeriod)
	case p.AgeAlarmThreshold < 0:
		return fmt.Errorf("AgeAlarmThreshold %s must not be negative", p.AgeAlarmThreshold)
	case !p.FIFO && (p.ContentBasedDeduplication || p.HighThroughputFIFO):
		return fmt.Errorf("ContentBasedDeduplication and HighThroughputFIFO need FIFO")
	}
	return nil
}

// cdkDuration converts a Go duration to a CDK duration in whole seconds.
func cdkDuration(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
