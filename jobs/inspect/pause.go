package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
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
//   - the queue's Lambda event source mappings, disabled or enabled (UpdateEventSourceMapping);
//     Lambda stops polling within seconds.
//
// Nothing is lost and nothing is judged: the queue keeps its messages and their receive counts;
// jobs already running finish and are deleted, retried or dead-lettered as usual; messages a
// poller received as the pause took effect run. No job starts once the pause has taken effect.
// Pausing tags first, resuming untags last, so a call that fails half-way leaves the queue
// paused, and repeating it finishes the work. Resuming enables every event source mapping of the
// queue, those disabled before the pause included.
func (i *Inspector) SetQueuePaused(ctx context.Context, queueURL string, paused bool) (QueuePause, error) {
	var res QueuePause
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	fail := func(err error) (QueuePause, error) {
		return res, fmt.Errorf("inspect: %s queue %s: %w", verb, queueURL, err)
	}
	_, wasPaused, err := i.QueuePaused(ctx, queueURL)
	if err != nil {
		return fail(err)
	}
	if paused && !wasPaused {
		if _, err := i.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(queueURL),
			Tags: map[string]string{contract.TagPaused: i.now().UTC().Format(time.RFC3339)}}); err != nil {
			return fail(err)
		}
		res.Changed = true
	}
	if res.Mappings, err = i.setMappings(ctx, queueURL, !paused); err != nil {
		return fail(err)
	}
	if !paused && wasPaused {
		if _, err := i.sqs.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(queueURL),
			TagKeys: []string{contract.TagPaused}}); err != nil {
			return fail(err)
		}
		res.Changed = true
	}
	res.Changed = res.Changed || len(res.Mappings) > 0
	return res, nil
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

// setMappings enables or disables the queue's event source mappings not yet in that state, and
// returns their UUIDs.
func (i *Inspector) setMappings(ctx context.Context, queueURL string, enabled bool) ([]string, error) {
	attrs, err := i.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, err
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	var changed []string
	p := lambda.NewListEventSourceMappingsPaginator(i.lam, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(arn)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return changed, fmt.Errorf("list event source mappings: %w", err)
		}
		for _, m := range page.EventSourceMappings {
			if aws.ToString(m.EventSourceArn) != arn || mappingEnabled(aws.ToString(m.State)) == enabled {
				continue
			}
			if _, err := i.lam.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{
				UUID: m.UUID, Enabled: aws.Bool(enabled)}); err != nil {
				return changed, fmt.Errorf("event source mapping %s: %w", aws.ToString(m.UUID), err)
			}
			changed = append(changed, aws.ToString(m.UUID))
		}
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
