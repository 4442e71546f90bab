package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// synthName is the physical id CloudFormation would give a resource this package handles or skips:
// its name property, or "<stack>-<logical id>" (CloudFormation adds a random suffix; a stable name
// is easier to find in logs and the same on every run). An event source mapping's Ref is a UUID on
// AWS, so it gets one derived from its stack and logical id.
func (dp *deployer) synthName(run *stackRun, id string) string {
	r := run.resources[id]
	props, _ := r["Properties"].(map[string]any)
	typ, _ := r["Type"].(string)
	nameProp := map[string]string{
		typeFunction: "FunctionName", "AWS::IAM::Role": "RoleName", "AWS::Logs::LogGroup": "LogGroupName",
		typeScheduleGroup: "Name", typeSchedule: "Name", "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
		"AWS::IAM::Policy": "PolicyName", "AWS::CloudWatch::Alarm": "AlarmName", "AWS::CloudWatch::Dashboard": "DashboardName",
	}[typ]
	if nameProp != "" {
		if v, ok := props[nameProp]; ok {
			if s, err := run.res.evalString(v, id+".Properties."+nameProp); err == nil && s != "" {
				// An explicit name gets the prefix too, or two deployments of one assembly
				// would claim the same schedule group or function name.
				if dp.o.Prefix == "" {
					return s
				}
				name := truncName(dp.o.Prefix+s, 64)
				if typ == typeScheduleGroup {
					if dp.groups == nil {
						dp.groups = map[string]string{}
					}
					dp.groups[s] = name
				}
				return name
			}
		}
	}
	if typ == typeESM {
		// A UUID in its 8-4-4-4-12 form, from a hash: the same on every run.
		sum := sha256.Sum256([]byte(run.name + "/" + id))
		h := hex.EncodeToString(sum[:16])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	return truncName(run.name+"-"+id, 64)
}

// truncName shortens s to max characters, as AWS name limits require (64 for functions and
// schedules, 80 for queues), keeping it unique with a hash of the whole name as its suffix.
func truncName(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return s[:max-len(suffix)] + suffix
}

// synthAttr is a Fn::GetAtt value of a resource this package handles or skips, built as AWS
// builds it (ARN formats from each service's documentation; a role id in the AROA form), since no
// service was asked to create the resource. An attribute with no such rule is an error, reported
// with the path of the reference.
func (dp *deployer) synthAttr(run *stackRun, id, attr string) (string, error) {
	r := run.resources[id]
	typ, _ := r["Type"].(string)
	name := run.physical[id]
	p, reg, acct := awsarn.Partition(dp.o.Region), dp.o.Region, dp.d.AccountID
	switch {
	case isCustom(typ):
		return CustomToken(run.name, id, attr), nil // its provider's data, when the stack starts
	case attr == "Arn" && typ == typeFunction:
		return "arn:" + p + ":lambda:" + reg + ":" + acct + ":function:" + name, nil
	case attr == "Arn" && typ == "AWS::IAM::Role":
		return "arn:" + p + ":iam::" + acct + ":role/" + name, nil
	case attr == "RoleId" && typ == "AWS::IAM::Role":
		// IAM role ids are "AROA" and 16 upper-case characters; derived from the name, stable.
		sum := sha256.Sum256([]byte(name))
		return "AROA" + strings.ToUpper(hex.EncodeToString(sum[:8])), nil
	case attr == "Arn" && typ == "AWS::Logs::LogGroup":
		return "arn:" + p + ":logs:" + reg + ":" + acct + ":log-group:" + name + ":*", nil
	case attr == "Arn" && typ == typeScheduleGroup:
		return "arn:" + p + ":scheduler:" + reg + ":" + acct + ":schedule-group/" + name, nil
	case attr == "Arn" && typ == typeSchedule:
		// A schedule's ARN names its group ("default" when GroupName is not set).
		group := "default"
		if props, ok := r["Properties"].(map[string]any); ok {
			if g, ok := props["GroupName"]; ok {
				if s, err := run.res.evalString(g, id+".Properties.GroupName"); err == nil {
					group = s
				}
			}
		}
		return "arn:" + p + ":scheduler:" + reg + ":" + acct + ":schedule/" + group + "/" + name, nil
	case attr == "Arn":
		// Any other type: the generic arn:partition:service:region:account:name form.
		svc := strings.ToLower(strings.Split(strings.TrimPrefix(typ, "AWS::"), "::")[0])
		return "arn:" + p + ":" + svc + ":" + reg + ":" + acct + ":" + name, nil
	}
	return "", fmt.Errorf("attribute %s of %s (%s) is not available offline", attr, id, typ)
}

// getAtt returns Fn::GetAtt values: read from the emulator for its resources, synthesized for the
// others. Values read are cached in run.attrs: a template refers to one queue ARN many times.
func (dp *deployer) getAtt(ctx context.Context, run *stackRun, id, attr string) (string, error) {
	if v, ok := run.attrs[id][attr]; ok {
		return v, nil
	}
	r, ok := run.resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt of unknown resource %q", id)
	}
	if run.place[id] != placeEmulator {
		return dp.synthAttr(run, id, attr)
	}
	phys, ok := run.physical[id]
	if !ok {
		return "", fmt.Errorf("resource %s is not created yet", id)
	}
	typ, _ := r["Type"].(string)
	var v string
	switch {
	case typ == typeQueue && attr == "QueueUrl":
		// A queue's physical id is its URL, as on AWS.
		v = phys
	case typ == typeQueue && attr == "QueueName":
		v = phys[strings.LastIndexByte(phys, '/')+1:]
	case typ == typeQueue && attr == "Arn":
		q, err := dp.queueAttrs(ctx, phys)
		if err != nil {
			return "", err
		}
		v = q[string(sqstypes.QueueAttributeNameQueueArn)]
	case typ == typeTable && (attr == "Arn" || attr == "StreamArn"):
		out, err := dp.c.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
		if err != nil {
			return "", fmt.Errorf("describe table %s: %w", phys, err)
		}
		if attr == "Arn" {
			v = aws.ToString(out.Table.TableArn)
		} else {
			v = aws.ToString(out.Table.LatestStreamArn)
		}
	case typ == "AWS::SNS::Topic" && attr == "TopicArn":
		v = phys
	case typ == "AWS::SNS::Topic" && attr == "TopicName":
		v = phys[strings.LastIndexByte(phys, ':')+1:]
	default:
		return "", fmt.Errorf("Fn::GetAtt %s.%s (%s) is not supported offline", id, attr, typ)
	}
	if run.attrs[id] == nil {
		run.attrs[id] = map[string]string{}
	}
	run.attrs[id][attr] = v
	return v, nil
}

// queueAttrs returns all the attributes of the queue at url (ARN, FIFO, visibility timeout,
// redrive policy), which CloudFormation's outputs do not carry.
func (dp *deployer) queueAttrs(ctx context.Context, url string) (map[string]string, error) {
	out, err := dp.c.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("queue attributes of %s: %w", url, err)
	}
	return out.Attributes, nil
}
