package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Destroy deletes what the deployment created on the emulator: schedules and groups, the stacks,
// and the queues and tables a stack's retention policy keeps. Errors are joined; it goes on past them.
//
// The order mirrors creation in reverse: schedules first (they are not in any stack), then the
// stacks last to first, so a stack is never deleted while a later one still imports its exports
// (CloudFormation refuses that). CDK retains stateful resources by default (DeletionPolicy
// Retain), so the queues and tables are then deleted by name; "not found" means the stack took
// them already.
func (d *Deployment) Destroy(ctx context.Context) error {
	var errs []error
	c := d.clients
	for _, s := range d.Schedules {
		if _, err := c.Scheduler.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(s.Name), GroupName: aws.String(s.Group)}); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.Name, err))
		}
	}
	for _, g := range d.ScheduleGroups {
		if _, err := c.Scheduler.DeleteScheduleGroup(ctx, &scheduler.DeleteScheduleGroupInput{Name: aws.String(g.Name)}); err != nil {
			errs = append(errs, fmt.Errorf("schedule group %s: %w", g.Name, err))
		}
	}
	for i := len(d.Stacks) - 1; i >= 0; i-- {
		s := d.Stacks[i]
		name := s.ID
		name = cmp.Or(name, s.Name)
		if _, err := c.CloudFormation.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
			errs = append(errs, fmt.Errorf("stack %s: %w", s.Name, err))
			continue
		}
		waitDeleted(ctx, c.CloudFormation, name)
	}
	for _, q := range d.Queues {
		if _, err := c.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q.URL)}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("queue %s: %w", q.Name, err))
		}
	}
	for _, t := range d.Tables {
		if _, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t.Name)}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("table %s: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}

// waitDeleted waits, up to a minute, until the stack is deleted or no longer changing, so the next
// stack's deletion does not find its exports still in use. It gives up quietly: Destroy reports
// the errors of the calls that follow, if any.
func waitDeleted(ctx context.Context, cfn CloudFormationAPI, name string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil || len(out.Stacks) == 0 || out.Stacks[0].StackStatus == cfntypes.StackStatusDeleteComplete ||
			!strings.HasSuffix(string(out.Stacks[0].StackStatus), "IN_PROGRESS") {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// isNotFound reports whether err says the queue or table is already gone. The emulators word this
// differently (moto, LocalStack, and each service), hence matching on the message.
func isNotFound(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NonExistentQueue") || strings.Contains(msg, "ResourceNotFound") ||
		strings.Contains(msg, "QueueDoesNotExist") || strings.Contains(msg, "not found")
}
