package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// createStack creates the stack on the emulator and waits until it is complete, returning its
// stack id. The stack is recorded in the Deployment before CreateStack, so Destroy removes it
// even if its creation fails half-way.
func (dp *deployer) createStack(ctx context.Context, name, body string) (string, error) {
	if out, err := dp.c.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}); err == nil {
		for _, s := range out.Stacks {
			if s.StackStatus != cfntypes.StackStatusDeleteComplete {
				return "", &StackExistsError{Stack: name}
			}
		}
	}
	dp.d.Stacks = append(dp.d.Stacks, Stack{Name: name})
	created, err := dp.c.CloudFormation.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String(name), TemplateBody: aws.String(body),
	})
	if err != nil {
		return "", &StackFailedError{Stack: name, Status: "CREATE_FAILED", Reason: err.Error()}
	}
	id := aws.ToString(created.StackId)
	dp.d.Stacks[len(dp.d.Stacks)-1].ID = id
	return id, dp.waitCreated(ctx, name, id)
}

// waitCreated polls the stack until CREATE_COMPLETE, as the CDK CLI does, with a delay that grows
// from 50 ms to 1 s: the emulator usually finishes in well under a second. Any other settled status
// (CREATE_FAILED, ROLLBACK_*) is a StackFailedError; Options.StackTimeout bounds the wait.
func (dp *deployer) waitCreated(ctx context.Context, name, id string) error {
	deadline := time.Now().Add(dp.o.StackTimeout)
	delay := 50 * time.Millisecond
	for {
		out, err := dp.c.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(id)})
		if err != nil {
			return fmt.Errorf("deploy: stack %s: %w", name, err)
		}
		if len(out.Stacks) == 1 {
			st := out.Stacks[0]
			switch st.StackStatus {
			case cfntypes.StackStatusCreateComplete:
				return nil
			case cfntypes.StackStatusCreateInProgress:
			default:
				return &StackFailedError{Stack: name, Status: string(st.StackStatus), Reason: dp.failureReason(ctx, id, aws.ToString(st.StackStatusReason))}
			}
		}
		if time.Now().After(deadline) {
			return &StackFailedError{Stack: name, Status: "TIMEOUT", Reason: "not complete after " + dp.o.StackTimeout.String()}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// failureReason collects the reasons of the stack's failed resource events ("Queue: ..."), which
// say far more than the stack's own status reason; fallback is used when there are none.
func (dp *deployer) failureReason(ctx context.Context, id, fallback string) string {
	out, err := dp.c.CloudFormation.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(id)})
	if err != nil {
		return fallback
	}
	var reasons []string
	for _, e := range out.StackEvents {
		if strings.HasSuffix(string(e.ResourceStatus), "FAILED") && e.ResourceStatusReason != nil {
			reasons = append(reasons, aws.ToString(e.LogicalResourceId)+": "+aws.ToString(e.ResourceStatusReason))
		}
	}
	if len(reasons) == 0 {
		return fallback
	}
	return strings.Join(reasons, "; ")
}

// readStack records the physical ids of the emulator's resources, the queues and tables, the
// stack's outputs, and applies time to live.
func (dp *deployer) readStack(ctx context.Context, run *stackRun) error {
	out, err := dp.c.CloudFormation.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(run.name)})
	if err != nil {
		return fmt.Errorf("deploy: stack %s: %w", run.name, err)
	}
	for _, r := range out.StackResources {
		id := aws.ToString(r.LogicalResourceId)
		if id == "" || run.place[id] != placeEmulator {
			continue
		}
		run.physical[id] = aws.ToString(r.PhysicalResourceId)
	}
	if err := dp.readResources(ctx, run); err != nil {
		return err
	}
	return dp.readOutputs(ctx, run)
}

// readResources records the emulator's queues and tables in the Deployment. A resource the
// emulator's CloudFormation quietly skipped (moto does so with only a server-log warning, while
// the stack says CREATE_COMPLETE) is listed in Skipped; a missing queue or table fails the
// deployment, since nothing would run without it.
func (dp *deployer) readResources(ctx context.Context, run *stackRun) error {
	ids := make([]string, 0, len(run.resources))
	for id := range run.resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if run.place[id] != placeEmulator {
			continue
		}
		phys, ok := run.physical[id]
		typ, _ := run.resources[id]["Type"].(string)
		if !ok {
			if typ == typeQueue || typ == typeTable {
				return &StackFailedError{Stack: run.name, Status: "INCOMPLETE", Reason: id + " (" + typ + ") was not created by the emulator"}
			}
			dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id, Type: typ, Reason: "the emulator's CloudFormation skipped it"})
			continue
		}
		switch typ {
		case typeQueue:
			q, err := dp.queue(ctx, run, id, phys)
			if err != nil {
				return err
			}
			dp.d.Queues = append(dp.d.Queues, q)
		case typeTable:
			t, err := dp.table(ctx, run, id, phys)
			if err != nil {
				return err
			}
			dp.d.Tables = append(dp.d.Tables, t)
		}
	}
	return nil
}

// readOutputs records the stack's outputs as the emulator resolved them, and its exports under
// their prefixed names.
func (dp *deployer) readOutputs(ctx context.Context, run *stackRun) error {
	stack := &dp.d.Stacks[len(dp.d.Stacks)-1]
	desc, err := dp.c.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(run.name)})
	if err != nil {
		return fmt.Errorf("deploy: stack %s: %w", run.name, err)
	}
	stack.Outputs = map[string]string{}
	tplOuts, _ := run.art.Template["Outputs"].(map[string]any)
	for _, s := range desc.Stacks {
		for _, o := range s.Outputs {
			stack.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
	}
	stack.Exports = map[string]string{}
	for name, o := range tplOuts {
		om, _ := o.(map[string]any)
		ex, _ := om["Export"].(map[string]any)
		if n, ok := ex["Name"].(string); ok {
			stack.Exports[dp.o.Prefix+n] = stack.Outputs[name]
		}
	}
	return nil
}

// queue describes the emulator's queue at url for the Deployment: what esm needs (ARN, FIFO,
// visibility timeout) and the redrive policy. The first queue ARN also tells the emulator's
// account id, used for every ARN synthesized from then on, so that local ARNs match its own.
func (dp *deployer) queue(ctx context.Context, run *stackRun, id, url string) (Queue, error) {
	attrs, err := dp.queueAttrs(ctx, url)
	if err != nil {
		return Queue{}, fmt.Errorf("deploy: stack %s: %w", run.name, err)
	}
	q := Queue{Stack: run.name, LogicalID: id, URL: url, Name: url[strings.LastIndexByte(url, '/')+1:], ARN: attrs[string(sqstypes.QueueAttributeNameQueueArn)]}
	q.FIFO = attrs[string(sqstypes.QueueAttributeNameFifoQueue)] == "true"
	if vt, err := strconv.Atoi(attrs[string(sqstypes.QueueAttributeNameVisibilityTimeout)]); err == nil {
		q.VisibilityTimeout = time.Duration(vt) * time.Second
	}
	if rp := attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)]; rp != "" {
		var p struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     any    `json:"maxReceiveCount"` // a number or a string, by emulator
		}
		if err := json.Unmarshal([]byte(rp), &p); err == nil {
			q.DeadLetterARN = p.DeadLetterTargetArn
			if s, ok := scalarString(p.MaxReceiveCount); ok {
				q.MaxReceiveCount, _ = strconv.Atoi(s)
			}
		}
	}
	if a, err := awsarn.ParseQueue(q.ARN); err == nil {
		dp.d.AccountID = a.Account // the emulator's account, for the ARNs synthesized from now on
		run.res.account = a.Account
	}
	return q, nil
}

// table describes the emulator's table for the Deployment and applies its
// TimeToLiveSpecification with UpdateTimeToLive: the emulator's CloudFormation ignores that
// property, so DescribeTimeToLive answers as it would on AWS.
func (dp *deployer) table(ctx context.Context, run *stackRun, id, name string) (Table, error) {
	t := Table{Stack: run.name, LogicalID: id, Name: name}
	out, err := dp.c.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return t, fmt.Errorf("deploy: stack %s: describe table %s: %w", run.name, name, err)
	}
	t.ARN = aws.ToString(out.Table.TableArn)
	props, _ := run.resources[id]["Properties"].(map[string]any)
	ttl, _ := props["TimeToLiveSpecification"].(map[string]any)
	if ttl == nil {
		return t, nil
	}
	spec, err := run.res.eval(ttl, id+".Properties.TimeToLiveSpecification")
	if err != nil {
		return t, err
	}
	sm, _ := spec.(map[string]any)
	attr, _ := sm["AttributeName"].(string)
	if !boolProp(sm, "Enabled", false) || attr == "" {
		return t, nil
	}
	if _, err := dp.c.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	}); err != nil {
		return t, fmt.Errorf("deploy: stack %s: time to live of %s: %w", run.name, name, err)
	}
	t.TTLAttribute = attr
	return t, nil
}

// refreshExports reads every export on the emulator (all pages), so the next stacks' and the local
// resources' Fn::ImportValue see them. Exports of other deployments are read too, under their own
// prefixes.
func (dp *deployer) refreshExports(ctx context.Context) error {
	var token *string
	for {
		out, err := dp.c.CloudFormation.ListExports(ctx, &cloudformation.ListExportsInput{NextToken: token})
		if err != nil {
			return fmt.Errorf("deploy: list exports: %w", err)
		}
		for _, e := range out.Exports {
			dp.exports[aws.ToString(e.Name)] = aws.ToString(e.Value)
		}
		if out.NextToken == nil || aws.ToString(out.NextToken) == "" {
			return nil
		}
		token = out.NextToken
	}
}
