package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
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
