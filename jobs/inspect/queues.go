package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Queue is a job queue and its dead-letter queue, as a deployment names them.
type Queue struct {
	Name   string // the stack output's <Name>, or the queue name taken from its URL
	URL    string // the job queue; empty when only a dead-letter queue was named and its source is unknown
	DLQURL string // the dead-letter queue; empty when the queue has none
}

// Target says which queues to look at. The zero Target means every queue in contract.DefaultStack's outputs.
type Target struct {
	// Stack is the CloudFormation stack whose outputs name the queues; "" means contract.DefaultStack.
	Stack string
	// Queues are queue URLs or names. A name is looked up among the stack's output names first,
	// then with GetQueueUrl. A queue's DLQ comes from the stack, or else its RedrivePolicy.
	Queues []string
	// DLQ is a dead-letter queue URL or name. With one entry in Queues it overrides that queue's
	// DLQ; alone, it names a DLQ whose source queue is found with ListDeadLetterSourceQueues.
	DLQ string
}

// Resolve turns a Target into queues. It returns ErrStackNotFound (wrapped) when the target needs
// the stack and the stack does not exist, and ErrNoQueues when the stack names no queues.
func (i *Inspector) Resolve(ctx context.Context, t Target) ([]Queue, error) {
	stack := t.Stack
	stack = cmp.Or(stack, contract.DefaultStack)
	if len(t.Queues) > 1 && t.DLQ != "" {
		return nil, fmt.Errorf("inspect: a DLQ can be given with one queue, not %d", len(t.Queues))
	}
	var (
		stackQueues []Queue
		stackErr    error
		stackLoaded bool
	)
	fromStack := func() ([]Queue, error) {
		if !stackLoaded {
			stackQueues, stackErr = i.StackQueues(ctx, stack)
			stackLoaded = true
		}
		return stackQueues, stackErr
	}

	if len(t.Queues) == 0 && t.DLQ == "" {
		qs, err := fromStack()
		if err != nil {
			return nil, err
		}
		if len(qs) == 0 {
			return nil, fmt.Errorf("%w: stack %s has no %s*/%s* outputs", ErrNoQueues, stack, contract.OutputQueuePrefix, contract.OutputDLQPrefix)
		}
		return qs, nil
	}

	if len(t.Queues) == 0 {
		dlq, err := i.queueURL(ctx, t.DLQ, fromStack, true)
		if err != nil {
			return nil, err
		}
		q := Queue{Name: awsarn.QueueName(dlq), DLQURL: dlq}
		if sources, err := i.DeadLetterSources(ctx, dlq); err == nil && len(sources) == 1 {
			q.URL = sources[0]
			q.Name = awsarn.QueueName(sources[0])
		}
		return []Queue{q}, nil
	}

	out := make([]Queue, 0, len(t.Queues))
	for _, ref := range t.Queues {
		q, err := i.resolveQueue(ctx, ref, fromStack)
		if err != nil {
			return nil, err
		}
		if t.DLQ != "" {
			dlq, err := i.queueURL(ctx, t.DLQ, fromStack, true)
			if err != nil {
				return nil, err
			}
			q.DLQURL = dlq
		}
		out = append(out, q)
	}
	return out, nil
}

// resolveQueue turns a URL or name into a Queue with its DLQ. A queue the stack names keeps the
// stack's name and DLQ; stack queues are matched by output name or queue name, not by URL, since
// one queue has several URL spellings (an emulator answers GetQueueUrl with its own host).
func (i *Inspector) resolveQueue(ctx context.Context, ref string, fromStack func() ([]Queue, error)) (Queue, error) {
	if qs, err := fromStack(); err == nil {
		name := ref
		if isURL(ref) {
			name = awsarn.QueueName(ref)
		}
		for _, q := range qs {
			if q.URL == "" {
				continue
			}
			if (!isURL(ref) && strings.EqualFold(q.Name, ref)) || awsarn.QueueName(q.URL) == name {
				return q, nil
			}
		}
	}
	u, err := i.queueURL(ctx, ref, fromStack, false)
	if err != nil {
		return Queue{}, err
	}
	q := Queue{Name: awsarn.QueueName(u), URL: u}
	dlq, err := i.RedriveTarget(ctx, u)
	if err != nil && !errors.Is(err, ErrNoDLQ) {
		return Queue{}, err
	}
	q.DLQURL = dlq
	return q, nil
}

// queueURL returns ref if it is a URL, the stack's URL for a stack name, or GetQueueUrl's answer.
func (i *Inspector) queueURL(ctx context.Context, ref string, fromStack func() ([]Queue, error), dlq bool) (string, error) {
	if isURL(ref) {
		return ref, nil
	}
	if qs, err := fromStack(); err == nil {
		for _, q := range qs {
			if strings.EqualFold(q.Name, ref) {
				if dlq && q.DLQURL != "" {
					return q.DLQURL, nil
				}
				if !dlq && q.URL != "" {
					return q.URL, nil
				}
			}
		}
	}
	out, err := i.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(ref)})
	if err != nil {
		return "", fmt.Errorf("inspect: queue %q: %w", ref, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// StackOutput returns the value of a deployed stack's output key, "" when the stack has none
// such. It returns an error wrapping ErrStackNotFound if the stack does not exist.
func (i *Inspector) StackOutput(ctx context.Context, stack, key string) (string, error) {
	out, err := i.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist") {
			return "", fmt.Errorf("%w: %s", ErrStackNotFound, stack)
		}
		return "", fmt.Errorf("inspect: describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return "", fmt.Errorf("%w: %s", ErrStackNotFound, stack)
	}
	for _, o := range out.Stacks[0].Outputs {
		if aws.ToString(o.OutputKey) == key {
			return aws.ToString(o.OutputValue), nil
		}
	}
	return "", nil
}

// StackQueues reads the queues a deployed stack names in its outputs (JobkitQueue<Name> and
// JobkitDlq<Name>), sorted by name. A queue without a DLQ output gets the DLQ of its
// RedrivePolicy, if any. It returns an error wrapping ErrStackNotFound if the stack does not exist.
func (i *Inspector) StackQueues(ctx context.Context, stack string) ([]Queue, error) {
	out, err := i.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist") {
			return nil, fmt.Errorf("%w: %s", ErrStackNotFound, stack)
		}
		return nil, fmt.Errorf("inspect: describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrStackNotFound, stack)
	}
	byName := map[string]*Queue{}
	get := func(name string) *Queue {
		if q, ok := byName[name]; ok {
			return q
		}
		q := &Queue{Name: name}
		byName[name] = q
		return q
	}
	for _, o := range out.Stacks[0].Outputs {
		key, val := aws.ToString(o.OutputKey), aws.ToString(o.OutputValue)
		switch {
		case strings.HasPrefix(key, contract.OutputQueuePrefix) && len(key) > len(contract.OutputQueuePrefix):
			get(key[len(contract.OutputQueuePrefix):]).URL = val
		case strings.HasPrefix(key, contract.OutputDLQPrefix) && len(key) > len(contract.OutputDLQPrefix):
			get(key[len(contract.OutputDLQPrefix):]).DLQURL = val
		}
	}
	qs := make([]Queue, 0, len(byName))
	for _, q := range byName {
		if q.DLQURL == "" && q.URL != "" {
			dlq, err := i.RedriveTarget(ctx, q.URL)
			if err != nil && !errors.Is(err, ErrNoDLQ) {
				return nil, err
			}
			q.DLQURL = dlq
		}
		qs = append(qs, *q)
	}
	sort.Slice(qs, func(a, b int) bool { return qs[a].Name < qs[b].Name })
	return qs, nil
}

// RedriveTarget returns the URL of the dead-letter queue named in the queue's RedrivePolicy, or an
// error wrapping ErrNoDLQ when it has none. When that queue has a RedrivePolicy of its own, it is
// the queue's holding queue (the JobQueue construct's, read by the redrive recorder) and its
// target is the dead-letter queue: RedriveTarget follows that one hop.
func (i *Inspector) RedriveTarget(ctx context.Context, queueURL string) (string, error) {
	target, err := i.redrivePolicyTarget(ctx, queueURL)
	if err != nil {
		return "", err
	}
	dlq, err := i.redrivePolicyTarget(ctx, target)
	if errors.Is(err, ErrNoDLQ) {
		return target, nil
	}
	return dlq, err
}

// redrivePolicyTarget returns the URL of the queue the queue's RedrivePolicy names, or an error
// wrapping ErrNoDLQ when it has none.
func (i *Inspector) redrivePolicyTarget(ctx context.Context, queueURL string) (string, error) {
	out, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", fmt.Errorf("inspect: redrive policy of %s: %w", queueURL, err)
	}
	raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if raw == "" {
		return "", fmt.Errorf("%w: %s has no RedrivePolicy", ErrNoDLQ, queueURL)
	}
	var policy struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(raw), &policy); err != nil || policy.DeadLetterTargetArn == "" {
		return "", fmt.Errorf("inspect: RedrivePolicy of %s is not readable: %q", queueURL, raw)
	}
	// arn:aws:sqs:<region>:<account>:<name>
	parts := strings.Split(policy.DeadLetterTargetArn, ":")
	if len(parts) != 6 {
		return "", fmt.Errorf("inspect: RedrivePolicy of %s: bad ARN %q", queueURL, policy.DeadLetterTargetArn)
	}
	u, err := i.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{
		QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4]),
	})
	if err != nil {
		return "", fmt.Errorf("inspect: dead-letter queue %s: %w", policy.DeadLetterTargetArn, err)
	}
	return aws.ToString(u.QueueUrl), nil
}

// DeadLetterSources lists the job queues whose RedrivePolicy targets the dead-letter queue. A
// queue that targets it and is itself the target of others is a holding queue (see
// RedriveTarget): the queues that target it stand in its place, so a redrive puts jobs back on
// their job queue, never on the holding queue.
func (i *Inspector) DeadLetterSources(ctx context.Context, dlqURL string) ([]string, error) {
	direct, err := i.deadLetterSources(ctx, dlqURL)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, u := range direct {
		behind, err := i.deadLetterSources(ctx, u)
		if err != nil {
			return nil, err
		}
		if len(behind) == 0 {
			urls = append(urls, u)
		}
		urls = append(urls, behind...)
	}
	return urls, nil
}

// deadLetterSources lists the queues whose RedrivePolicy targets queueURL.
func (i *Inspector) deadLetterSources(ctx context.Context, queueURL string) ([]string, error) {
	var urls []string
	p := sqs.NewListDeadLetterSourceQueuesPaginator(i.sqs, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(queueURL)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("inspect: sources of %s: %w", queueURL, err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// StackSources returns the URLs of the queues a deployed stack names (StackQueues) whose
// dead-letter queue is dlqURL: destinations a redrive from that DLQ may trust
// (RedriveOptions.Sources).
func (i *Inspector) StackSources(ctx context.Context, stack, dlqURL string) ([]string, error) {
	qs, err := i.StackQueues(ctx, stack)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, q := range qs {
		if q.URL != "" && q.DLQURL != "" && queueKey(q.DLQURL) == queueKey(dlqURL) {
			urls = append(urls, q.URL)
		}
	}
	return urls, nil
}

// AgeMode says how Stats finds the age of a queue's oldest message. SQS exposes that age only as
// the CloudWatch metric ApproximateAgeOfOldestMessage, not as a queue attribute; the alternative is
// to look at messages, and receiving a message is not free (see AgeSample).
type AgeMode int

const (
	// AgeAuto reads CloudWatch; where CloudWatch has no answer it samples dead-letter queues (whose
	// receive counts do not matter) and leaves job queues unknown. The default.
	AgeAuto AgeMode = iota
	// AgeCloudWatch reads only CloudWatch's ApproximateAgeOfOldestMessage (latest 1-minute
	// maximum of the last 15 minutes; AWS publishes it with a delay of a few minutes).
	AgeCloudWatch
	// AgeSample receives up to 10 messages of every queue with a 1-second visibility timeout,
	// hands them back at once, and reports the oldest SentTimestamp seen. This works on any
	// endpoint, but each sampled message's ApproximateReceiveCount goes up by one — on a job queue
	// that spends one of the job's attempts and can push a job on its last attempt to the DLQ. On
	// a Standard queue the sample is a lower bound (SQS returns some messages, not the oldest).
	AgeSample
	// AgeOff leaves ages unknown.
	AgeOff
)

// AgeSource says where a QueueStats.OldestAge came from.
type AgeSource string

// Where an age came from.
const (
	AgeUnknown        AgeSource = ""           // no age: OldestAge is 0 and means nothing
	AgeFromCloudWatch AgeSource = "cloudwatch" // CloudWatch ApproximateAgeOfOldestMessage
	AgeFromSample     AgeSource = "sample"     // sampled messages' SentTimestamp (a lower bound)
	AgeFromEmptyQueue AgeSource = "empty"      // the queue holds no messages, so the age is 0
)

const ageSampleBatchSize = 10

// StatsOptions tunes Stats; nil means defaults.
type StatsOptions struct {
	Age AgeMode
	// NoPause leaves QueueStats.Paused unread: one ListQueueTags per queue less (a page that
	// refreshes every few seconds reads it less often).
	NoPause bool
}

// QueueStats are a queue's approximate counts (SQS's ApproximateNumberOfMessages*) and the age of
// its oldest message.
type QueueStats struct {
	Name     string
	URL      string
	ARN      string
	FIFO     bool
	Visible  int64 // ApproximateNumberOfMessages: ready to be received
	InFlight int64 // ApproximateNumberOfMessagesNotVisible: received, not yet deleted
	Delayed  int64 // ApproximateNumberOfMessagesDelayed
	// OldestAge is the age of the oldest message; meaningful only when OldestAgeSource is set.
	OldestAge       time.Duration
	OldestAgeSource AgeSource
	// Paused says the queue is paused (SetQueuePaused) since PausedSince; always false for a DLQ.
	Paused      bool
	PausedSince time.Time
	// DLQ holds the dead-letter queue's stats (its DLQ field is nil); nil when there is none.
	DLQ *QueueStats
}

// Total returns Visible + InFlight + Delayed.
func (s QueueStats) Total() int64 { return s.Visible + s.InFlight + s.Delayed }

// StatsReport is what Stats returns: one entry per queue, in the order asked, and warnings about
// what could not be measured (such as CloudWatch being unreachable).
type StatsReport struct {
	Queues   []QueueStats
	Warnings []string
}

// Stats reads the counts of each queue and its DLQ (one GetQueueAttributes call each, run
// concurrently), and the oldest-message ages as opts.Age says.
func (i *Inspector) Stats(ctx context.Context, queues []Queue, opts *StatsOptions) (*StatsReport, error) {
	if opts == nil {
		opts = &StatsOptions{}
	}
	rep := &StatsReport{Queues: make([]QueueStats, len(queues))}
	var all []*QueueStats // every queue and DLQ, for the age pass
	for n, q := range queues {
		rep.Queues[n] = QueueStats{Name: q.Name, URL: q.URL}
		if q.DLQURL != "" {
			rep.Queues[n].DLQ = &QueueStats{Name: awsarn.QueueName(q.DLQURL), URL: q.DLQURL}
		}
	}
	for n := range rep.Queues {
		if rep.Queues[n].URL != "" {
			all = append(all, &rep.Queues[n])
		}
		if rep.Queues[n].DLQ != nil {
			all = append(all, rep.Queues[n].DLQ)
		}
	}
	isDLQ := map[*QueueStats]bool{}
	for n := range rep.Queues {
		if rep.Queues[n].DLQ != nil {
			isDLQ[rep.Queues[n].DLQ] = true
		}
	}
	errs := make([]error, len(all))
	pauseErrs := make([]error, len(all))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for n, s := range all {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if errs[n] = i.counts(ctx, s); errs[n] == nil && !isDLQ[s] && !opts.NoPause {
				s.PausedSince, s.Paused, pauseErrs[n] = i.QueuePaused(ctx, s.URL)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for n, err := range pauseErrs {
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("whether %s is paused is unknown: %v", all[n].Name, err))
		}
	}
	i.ages(ctx, all, isDLQ, opts.Age, rep)
	return rep, nil
}

func (i *Inspector) counts(ctx context.Context, s *QueueStats) error {
	out, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.URL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			sqstypes.QueueAttributeNameQueueArn,
			sqstypes.QueueAttributeNameFifoQueue,
		},
	})
	if err != nil {
		return fmt.Errorf("inspect: attributes of %s: %w", s.URL, err)
	}
	a := out.Attributes
	s.Visible = atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	s.InFlight = atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	s.Delayed = atoi64(a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
	s.ARN = a[string(sqstypes.QueueAttributeNameQueueArn)]
	s.FIFO = a[string(sqstypes.QueueAttributeNameFifoQueue)] == "true" || strings.HasSuffix(s.URL, ".fifo")
	return nil
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// ages fills OldestAge/OldestAgeSource of every queue in all.
func (i *Inspector) ages(ctx context.Context, all []*QueueStats, isDLQ map[*QueueStats]bool, mode AgeMode, rep *StatsReport) {
	if mode == AgeOff {
		return
	}
	var pending []*QueueStats
	for _, s := range all {
		if s.Total() == 0 {
			s.OldestAge, s.OldestAgeSource = 0, AgeFromEmptyQueue
			continue
		}
		pending = append(pending, s)
	}
	if len(pending) == 0 {
		return
	}
	if mode == AgeAuto || mode == AgeCloudWatch {
		if err := i.cloudWatchAges(ctx, pending); err != nil {
			rep.Warnings = append(rep.Warnings, "oldest age: CloudWatch GetMetricData failed ("+shortError(err)+")")
		}
		var still []*QueueStats
		for _, s := range pending {
			if s.OldestAgeSource == AgeUnknown && (mode == AgeAuto && isDLQ[s]) {
				still = append(still, s)
			}
		}
		pending = still
	}
	if mode == AgeCloudWatch {
		return
	}
	for _, s := range pending {
		if s.OldestAgeSource != AgeUnknown {
			continue
		}
		if err := i.sampleAge(ctx, s); err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("oldest age of %s: sample failed: %v", s.Name, err))
		}
	}
}

// cloudWatchAges reads ApproximateAgeOfOldestMessage for every queue in one GetMetricData call.
// Queues with no datapoint in the last 15 minutes stay unknown.
func (i *Inspector) cloudWatchAges(ctx context.Context, qs []*QueueStats) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := i.now()
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-15 * time.Minute)),
		EndTime:   aws.Time(now),
		ScanBy:    cwtypes.ScanByTimestampDescending,
	}
	for n, s := range qs {
		in.MetricDataQueries = append(in.MetricDataQueries, cwtypes.MetricDataQuery{
			Id: aws.String("q" + strconv.Itoa(n)),
			MetricStat: &cwtypes.MetricStat{
				Period: aws.Int32(60),
				Stat:   aws.String("Maximum"),
				Metric: &cwtypes.Metric{
					Namespace:  aws.String("AWS/SQS"),
					MetricName: aws.String("ApproximateAgeOfOldestMessage"),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(awsarn.QueueName(s.URL))}},
				},
			},
		})
	}
	for len(in.MetricDataQueries) > 0 {
		// GetMetricData takes up to 500 queries per call.
		page := *in
		if len(page.MetricDataQueries) > 500 {
			page.MetricDataQueries = page.MetricDataQueries[:500]
		}
		in.MetricDataQueries = in.MetricDataQueries[len(page.MetricDataQueries):]
		p := cloudwatch.NewGetMetricDataPaginator(i.cw, &page)
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, r := range out.MetricDataResults {
				n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(r.Id), "q"))
				if err != nil || n < 0 || n >= len(qs) || len(r.Values) == 0 || qs[n].OldestAgeSource != AgeUnknown {
					continue
				}
				qs[n].OldestAge = time.Duration(r.Values[0] * float64(time.Second))
				qs[n].OldestAgeSource = AgeFromCloudWatch
			}
		}
	}
	return nil
}

// sampleAge receives up to 10 messages with a 1 s visibility timeout, hands them back at once and
// takes the oldest SentTimestamp. See AgeSample for what this costs.
func (i *Inspector) sampleAge(ctx context.Context, s *QueueStats) error {
	if s.Visible == 0 {
		return nil // in-flight or delayed messages cannot be sampled: unknown
	}
	out, err := i.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.URL),
		MaxNumberOfMessages:         ageSampleBatchSize,
		VisibilityTimeout:           1, // 0 would be dropped by the SDK and mean the queue default
		WaitTimeSeconds:             1, // long polling asks every SQS host, not a sample of them
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return err
	}
	if len(out.Messages) == 0 {
		return nil
	}
	i.release(ctx, s.URL, out.Messages)
	now := i.now()
	var oldest time.Duration
	for _, m := range out.Messages {
		if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			if age := now.Sub(time.UnixMilli(ms)); age > oldest {
				oldest = age
			}
		}
	}
	s.OldestAge, s.OldestAgeSource = oldest, AgeFromSample
	return nil
}

// release makes messages visible again at once (ChangeMessageVisibility 0, batches of 10).
// It runs even when ctx is done; failures are left to the visibility timeout, which hands the
// messages back anyway.
func (i *Inspector) release(ctx context.Context, queueURL string, msgs []sqstypes.Message) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for start := 0; start < len(msgs); start += 10 {
		end := min(start+10, len(msgs))
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, 0, end-start)
		for n, m := range msgs[start:end] {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String("m" + strconv.Itoa(n)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		_, _ = i.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(queueURL), Entries: entries,
		})
	}
}
