package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// QueuePause is what SetQueuePaused did.
type QueuePause struct {
	// Changed is false when the queue was already in the asked state: nothing was written.
	Changed bool
	// Mappings are the UUIDs of the queue's Lambda event source mappings it disabled (pause) or
	// enabled (resume).
	Mappings []string
}

// SetQueuePaused pauses (paused true) or resumes the consumers of a job queue, whatever they are:
//   - the queue's tag contract.TagPaused, which container Consumers read (every
//     jobs.ConsumerOptions.PauseCheck, 10 s by default) and the offline stack's event source
//     mappings too;
//   - the queue's Lambda event source mappings, disabled (UpdateEventSourceMapping); Lambda stops
//     polling within seconds. Their UUIDs are kept in the tag contract.TagPausedMappings, and
//     resuming enables those, not a mapping that was disabled before the pause.
//
// Nothing is lost and nothing is judged: the queue keeps its messages and their receive counts;
// jobs already running finish and are deleted, retried or dead-lettered as usual; messages a
// poller received as the pause took effect run. Pausing tags first, resuming untags last, so a
// call that fails half-way leaves the queue paused, and repeating it finishes the work. A
// mapping CloudFormation deployed drifts from its template while paused: a deployment that
// updates it enables it again.
func (i *Inspector) SetQueuePaused(ctx context.Context, queueURL string, paused bool) (QueuePause, error) {
	var res QueuePause
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	fail := func(err error) (QueuePause, error) {
		return res, fmt.Errorf("inspect: %s queue %s: %w", verb, queueURL, err)
	}
	tags, err := i.sqs.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(queueURL)})
	if err != nil {
		return fail(err)
	}
	_, wasPaused := tags.Tags[contract.TagPaused]
	listed := splitMappings(tags.Tags[contract.TagPausedMappings])
	if paused {
		if !wasPaused {
			if _, err := i.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(queueURL),
				Tags: map[string]string{contract.TagPaused: i.now().UTC().Format(time.RFC3339)}}); err != nil {
				return fail(err)
			}
			res.Changed = true
		}
		// The mappings to disable are remembered before they are disabled: a call that fails
		// half-way leaves none disabled that the resume would not enable.
		enabled, err := i.queueMappings(ctx, queueURL, true)
		if err != nil {
			return fail(err)
		}
		if len(enabled) > 0 {
			v := allMappings
			if tags.Tags[contract.TagPausedMappings] != allMappings {
				v = joinMappings(append(listed, enabled...))
			}
			if _, err := i.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(queueURL),
				Tags: map[string]string{contract.TagPausedMappings: v}}); err != nil {
				return fail(err)
			}
		}
		if res.Mappings, err = i.setMappings(ctx, enabled, false); err != nil {
			return fail(err)
		}
		res.Changed = res.Changed || len(res.Mappings) > 0
		return res, nil
	}
	disabled, err := i.queueMappings(ctx, queueURL, false)
	if err != nil {
		return fail(err)
	}
	if tags.Tags[contract.TagPausedMappings] != allMappings { // else more than a tag could list: all
		disabled = slices.DeleteFunc(disabled, func(id string) bool { return !slices.Contains(listed, id) })
	}
	if res.Mappings, err = i.setMappings(ctx, disabled, true); err != nil {
		return fail(err)
	}
	// UntagQueue is idempotent: a tag another call set meanwhile is removed too.
	if _, err := i.sqs.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(queueURL),
		TagKeys: []string{contract.TagPaused, contract.TagPausedMappings}}); err != nil {
		return fail(err)
	}
	res.Changed = wasPaused || len(res.Mappings) > 0
	return res, nil
}

// allMappings is TagPausedMappings's value when the UUIDs would not fit a tag (256 characters).
const allMappings = "all"

func splitMappings(v string) []string {
	if v == "" || v == allMappings {
		return nil
	}
	return strings.Split(v, " ")
}

func joinMappings(ids []string) string {
	slices.Sort(ids)
	v := strings.Join(slices.Compact(ids), " ")
	if len(v) > 256 {
		return allMappings
	}
	return v
}

// QueuePaused reports whether a queue is paused (SetQueuePaused), and since when.
func (i *Inspector) QueuePaused(ctx context.Context, queueURL string) (since time.Time, paused bool, err error) {
	out, err := i.sqs.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(queueURL)})
	if err != nil {
		return time.Time{}, false, err
	}
	v, ok := out.Tags[contract.TagPaused]
	if !ok {
		return time.Time{}, false, nil
	}
	since, _ = time.Parse(time.RFC3339, v) // a hand-set tag may hold anything: still paused
	return since, true, nil
}

// queueMappings returns the UUIDs of the queue's event source mappings that are (or are
// becoming) enabled, or disabled.
func (i *Inspector) queueMappings(ctx context.Context, queueURL string, enabled bool) ([]string, error) {
	arn, err := i.queueARN(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	var ids []string
	p := lambda.NewListEventSourceMappingsPaginator(i.lam, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(arn)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list event source mappings: %w", err)
		}
		for _, m := range page.EventSourceMappings {
			if aws.ToString(m.EventSourceArn) == arn && mappingEnabled(aws.ToString(m.State)) == enabled {
				ids = append(ids, aws.ToString(m.UUID))
			}
		}
	}
	return ids, nil
}

func (i *Inspector) queueARN(ctx context.Context, queueURL string) (string, error) {
	attrs, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", err
	}
	return attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}

// setMappings enables or disables the event source mappings ids (queueMappings found them in
// the other state), and returns those it changed.
func (i *Inspector) setMappings(ctx context.Context, ids []string, enabled bool) ([]string, error) {
	var changed []string
	for _, id := range ids {
		if _, err := i.lam.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{
			UUID: aws.String(id), Enabled: aws.Bool(enabled)}); err != nil {
			var busy *lambdatypes.ResourceInUseException
			if errors.As(err, &busy) {
				return changed, fmt.Errorf("event source mapping %s is being changed: try again in a few seconds: %w", id, err)
			}
			return changed, fmt.Errorf("event source mapping %s: %w", id, err)
		}
		changed = append(changed, id)
	}
	return changed, nil
}

// mappingEnabled reports whether an event source mapping in state is (or is becoming) enabled.
func mappingEnabled(state string) bool {
	switch state {
	case "Disabled", "Disabling":
		return false
	}
	return true // Creating, Enabling, Enabled, Updating
}
