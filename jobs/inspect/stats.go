package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

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
