package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// CloudFormationAPI is the part of the CloudFormation API Deploy and Destroy call.
type CloudFormationAPI interface {
	CreateStack(ctx context.Context, in *cloudformation.CreateStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateStackOutput, error)
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DescribeStackResources(ctx context.Context, in *cloudformation.DescribeStackResourcesInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
	ListExports(ctx context.Context, in *cloudformation.ListExportsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListExportsOutput, error)
	DeleteStack(ctx context.Context, in *cloudformation.DeleteStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error)
}

// SQSAPI is the part of the SQS API Deploy and Destroy call.
type SQSAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// DynamoDBAPI is the part of the DynamoDB API Deploy and Destroy call.
type DynamoDBAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// SchedulerAPI is the part of the EventBridge Scheduler API Deploy and Destroy call.
type SchedulerAPI interface {
	CreateScheduleGroup(ctx context.Context, in *scheduler.CreateScheduleGroupInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleGroupOutput, error)
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
	DeleteScheduleGroup(ctx context.Context, in *scheduler.DeleteScheduleGroupInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleGroupOutput, error)
}

var (
	_ CloudFormationAPI = (*cloudformation.Client)(nil)
	_ SQSAPI            = (*sqs.Client)(nil)
	_ DynamoDBAPI       = (*dynamodb.Client)(nil)
	_ SchedulerAPI      = (*scheduler.Client)(nil)
)

// Clients are the AWS clients Deploy uses.
type Clients struct {
	CloudFormation CloudFormationAPI
	SQS            SQSAPI
	DynamoDB       DynamoDBAPI
	Scheduler      SchedulerAPI
}

// NewClients returns the clients for cfg.
func NewClients(cfg aws.Config) Clients {
	return Clients{
		CloudFormation: cloudformation.NewFromConfig(cfg),
		SQS:            sqs.NewFromConfig(cfg),
		DynamoDB:       dynamodb.NewFromConfig(cfg),
		Scheduler:      scheduler.NewFromConfig(cfg),
	}
}

// Options configure Deploy. Nil means the defaults.
type Options struct {
	// CDKOut is the cloud assembly directory; default "cdk.out".
	CDKOut string
	// Stacks limits the deployment to these stacks (by name) and what they depend on; default all.
	Stacks []string
	// Prefix is put before every stack name, every export name and every physical name the
	// template sets (a schedule group's Name, a FunctionName), so several deployments of one
	// assembly can share an emulator (tests). Default none.
	Prefix string
	// ModuleDir is where "jobkit:source" paths are relative to; default the parent of CDKOut.
	ModuleDir string
	// BuildDir receives the functions' bootstraps (<BuildDir>/<stack>/<logical id>/bootstrap);
	// default <ModuleDir>/.run/functions.
	BuildDir string
	// SkipBuild leaves Function.Bootstrap empty: resources only.
	SkipBuild bool
	// Sources substitutes the Go package built for a function: it maps a function's
	// SourceMetadataKey path to the package to build instead, both relative to ModuleDir (e.g. to
	// run an instrumented build of a function). Function.Source keeps the assembly's path.
	// Default none.
	Sources map[string]string
	// Region of the deployment; default the config's region (or us-east-1).
	Region string
	// AccountID is used in synthesized ARNs until a created queue tells the emulator's own;
	// default 123456789012.
	AccountID string
	// StackTimeout bounds each stack's creation; default 2 minutes.
	StackTimeout time.Duration
	// Logger receives one line per stack and per skipped resource; default discards.
	Logger *slog.Logger
}

// StackExistsError is returned when a stack of the assembly already exists on the emulator.
type StackExistsError struct{ Stack string }

func (e *StackExistsError) Error() string {
	return "deploy: stack " + e.Stack + " already exists; destroy it (or restart the emulator) first"
}

// StackFailedError is returned when the emulator's CloudFormation does not create a stack.
type StackFailedError struct {
	Stack, Status, Reason string
}

func (e *StackFailedError) Error() string {
	return "deploy: stack " + e.Stack + ": " + e.Status + ": " + e.Reason
}

// ConfigError reports a deployment that AWS would refuse, or that this package cannot run.
type ConfigError struct {
	Stack, LogicalID, Reason string
}

func (e *ConfigError) Error() string {
	return "deploy: stack " + e.Stack + ": " + e.LogicalID + ": " + e.Reason
}

// Where a resource type goes.
const (
	placeEmulator = iota + 1 // created by the emulator's CloudFormation
	placeLocal               // run (functions, event source mappings) or created by this package (schedules)
	placeSkipped             // not needed offline
)

// emulatorTypes are the resource types the emulator's CloudFormation creates.
var emulatorTypes = map[string]bool{
	"AWS::SQS::Queue": true, "AWS::SQS::QueuePolicy": true, "AWS::DynamoDB::Table": true,
	"AWS::SNS::Topic": true, "AWS::SNS::Subscription": true, "AWS::SNS::TopicPolicy": true,
	"AWS::Events::EventBus": true, "AWS::Events::Rule": true, "AWS::SSM::Parameter": true,
	"AWS::S3::Bucket": true, "AWS::CloudFormation::WaitConditionHandle": true,
}

const (
	typeFunction      = "AWS::Lambda::Function"
	typeESM           = "AWS::Lambda::EventSourceMapping"
	typeScheduleGroup = "AWS::Scheduler::ScheduleGroup"
	typeSchedule      = "AWS::Scheduler::Schedule"
	typeQueue         = "AWS::SQS::Queue"
	typeTable         = "AWS::DynamoDB::Table"
)

// SourceMetadataKey is the metadata key naming a function's Go main package, relative to the
// module (infra/constructs writes it).
const SourceMetadataKey = "jobkit:source"

func placeOf(typ string) int {
	switch {
	case emulatorTypes[typ]:
		return placeEmulator
	case typ == typeFunction || typ == typeESM || typ == typeScheduleGroup || typ == typeSchedule:
		return placeLocal
	}
	return placeSkipped
}

func skipReason(typ string) string {
	switch {
	case strings.HasPrefix(typ, "AWS::IAM::"):
		return "IAM is not enforced offline"
	case strings.HasPrefix(typ, "AWS::CloudWatch::"):
		return "CloudWatch is not served offline (metrics are EMF log lines)"
	case strings.HasPrefix(typ, "AWS::Logs::"):
		return "functions log to the terminal offline"
	case strings.HasPrefix(typ, "AWS::KMS::"):
		return "queues and tables are not encrypted offline"
	case typ == "AWS::Lambda::Permission":
		return "invoke permissions are not enforced offline"
	case strings.HasPrefix(typ, "Custom::") || typ == "AWS::CloudFormation::CustomResource":
		return "custom resources need their provider function"
	}
	return "not supported offline"
}

// Deploy creates the stacks of a cloud assembly on the emulator and resolves what its functions
// need to run. Queues, tables and the other types the emulator's CloudFormation serves are created
// with CreateStack (one stack per assembly stack, exports included, so Fn::ImportValue works as on
// AWS); a table's TimeToLiveSpecification, which the emulator ignores, is applied with
// UpdateTimeToLive; schedule groups and schedules, which it skips, are created with the Scheduler
// API. Functions and event source mappings are resolved (environment, queue URLs and ARNs, batch
// settings) for lambdaruntime and esm, and each function's bootstrap is built for this machine
// from its "jobkit:source" package. IAM, logs, alarms and dashboards are skipped and listed in
// Deployment.Skipped.
//
// On error the stacks created so far are in the returned Deployment (which may be non-nil), so
// Destroy can remove them.
func Deploy(ctx context.Context, clients Clients, opts *Options) (*Deployment, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.CDKOut == "" {
		o.CDKOut = "cdk.out"
	}
	cdkOut, err := filepath.Abs(o.CDKOut)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	if o.ModuleDir == "" {
		o.ModuleDir = filepath.Dir(cdkOut)
	}
	if o.BuildDir == "" {
		o.BuildDir = filepath.Join(o.ModuleDir, ".run", "functions")
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "123456789012"
	}
	if o.StackTimeout <= 0 {
		o.StackTimeout = 2 * time.Minute
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stacks, err := ReadAssembly(cdkOut)
	if err != nil {
		return nil, err
	}
	stacks, err = selectStacks(stacks, o.Stacks)
	if err != nil {
		return nil, err
	}
	d := &Deployment{Region: o.Region, AccountID: o.AccountID, Prefix: o.Prefix, clients: clients}
	dp := &deployer{c: clients, o: o, log: log, d: d, exports: map[string]string{}}
	for _, st := range stacks {
		if err := dp.stack(ctx, st); err != nil {
			return d, err
		}
	}
	if err := dp.linkMappings(ctx); err != nil {
		return d, err
	}
	if !o.SkipBuild {
		if err := dp.build(ctx, cdkOut); err != nil {
			return d, err
		}
	}
	return d, nil
}

func selectStacks(all []StackArtifact, names []string) ([]StackArtifact, error) {
	if len(names) == 0 {
		return all, nil
	}
	byName := map[string]StackArtifact{}
	byID := map[string]StackArtifact{}
	for _, s := range all {
		byName[s.Name], byID[s.ID] = s, s
	}
	want := map[string]bool{}
	var add func(id string)
	add = func(id string) {
		if want[id] {
			return
		}
		want[id] = true
		for _, dep := range byID[id].DependsOn {
			add(dep)
		}
	}
	for _, n := range names {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("deploy: no stack named %q in the assembly", n)
		}
		add(s.ID)
	}
	var out []StackArtifact
	for _, s := range all {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	return out, nil
}

type deployer struct {
	c       Clients
	o       Options
	log     *slog.Logger
	d       *Deployment
	exports map[string]string
}

// stackRun is the state of one stack while it deploys.
type stackRun struct {
	name      string // with the prefix
	art       StackArtifact
	resources map[string]map[string]any // active resources
	place     map[string]int
	physical  map[string]string            // Ref values
	attrs     map[string]map[string]string // Fn::GetAtt values known
	res       *resolver
}

func (dp *deployer) stack(ctx context.Context, art StackArtifact) error {
	name := dp.o.Prefix + art.Name
	run := &stackRun{
		name: name, art: art, resources: map[string]map[string]any{}, place: map[string]int{},
		physical: map[string]string{}, attrs: map[string]map[string]string{},
	}
	tpl := art.Template
	resources, _ := tpl["Resources"].(map[string]any)
	params, err := dp.params(art)
	if err != nil {
		return err
	}
	condDefs, _ := tpl["Conditions"].(map[string]any)
	mappings, _ := tpl["Mappings"].(map[string]any)
	run.res = &resolver{
		stack: name, region: dp.o.Region, account: dp.d.AccountID,
		stackID:  "arn:" + partition(dp.o.Region) + ":cloudformation:" + dp.o.Region + ":" + dp.d.AccountID + ":stack/" + name + "/local",
		params:   params,
		mappings: mappings,
		condDefs: condDefs,
		ref: func(id string) (string, bool) {
			v, ok := run.physical[id]
			return v, ok
		},
		getAtt: func(id, attr string) (string, error) { return dp.getAtt(ctx, run, id, attr) },
		importValue: func(n string) (string, bool) {
			v, ok := dp.exports[dp.o.Prefix+n]
			return v, ok
		},
	}
	ids := make([]string, 0, len(resources))
	for id := range resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r, ok := resources[id].(map[string]any)
		if !ok {
			return &ConfigError{Stack: name, LogicalID: id, Reason: "resource is not an object"}
		}
		if c, ok := r["Condition"].(string); ok {
			on, err := run.res.condition(c)
			if err != nil {
				return err
			}
			if !on {
				continue
			}
		}
		typ, _ := r["Type"].(string)
		run.resources[id] = r
		run.place[id] = placeOf(typ)
		if run.place[id] != placeEmulator {
			run.physical[id] = dp.synthName(run, id)
		}
		if run.place[id] == placeSkipped {
			dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: name, LogicalID: id, Type: typ, Reason: skipReason(typ)})
			dp.log.Debug("resource skipped", "stack", name, "logical_id", id, "type", typ, "reason", skipReason(typ))
		}
	}

	// 1. The emulator's part, through its CloudFormation.
	body, err := dp.emulatorTemplate(run)
	if err != nil {
		return err
	}
	stackID, err := dp.createStack(ctx, name, body)
	if err != nil {
		return err
	}
	run.res.stackID = stackID
	if err := dp.readStack(ctx, run); err != nil {
		return err
	}
	if err := dp.refreshExports(ctx); err != nil {
		return err
	}
	// 2. The local part.
	for _, id := range ids {
		if run.place[id] != placeLocal || run.resources[id] == nil {
			continue
		}
		var err error
		switch typ, _ := run.resources[id]["Type"].(string); typ {
		case typeScheduleGroup:
			err = dp.scheduleGroup(ctx, run, id)
		case typeFunction:
			err = dp.function(run, id)
		}
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		if run.place[id] != placeLocal || run.resources[id] == nil {
			continue
		}
		var err error
		switch typ, _ := run.resources[id]["Type"].(string); typ {
		case typeSchedule:
			err = dp.schedule(ctx, run, id)
		case typeESM:
			err = dp.mapping(run, id)
		}
		if err != nil {
			return err
		}
	}
	dp.log.Info("stack deployed", "stack", name, "emulator_resources", countPlace(run, placeEmulator),
		"local_resources", countPlace(run, placeLocal), "skipped", countPlace(run, placeSkipped))
	return nil
}

func countPlace(run *stackRun, p int) int {
	n := 0
	for _, v := range run.place {
		if v == p {
			n++
		}
	}
	return n
}

// params returns the template's parameter values: their defaults. The CDK bootstrap version
// parameter (and the rule that checks it) do not apply offline.
func (dp *deployer) params(art StackArtifact) (map[string]any, error) {
	out := map[string]any{}
	ps, _ := art.Template["Parameters"].(map[string]any)
	for name, p := range ps {
		if name == "BootstrapVersion" {
			continue
		}
		pm, _ := p.(map[string]any)
		def, ok := pm["Default"]
		if !ok {
			return nil, &ConfigError{Stack: dp.o.Prefix + art.Name, LogicalID: name, Reason: "parameter has no default; offline deployments take none"}
		}
		if typ, _ := pm["Type"].(string); strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
			s, _ := scalarString(def)
			var list []any
			for _, item := range strings.Split(s, ",") {
				list = append(list, strings.TrimSpace(item))
			}
			out[name] = list
			continue
		}
		out[name] = def
	}
	return out, nil
}

// synthName is the physical id CloudFormation would give a resource this package handles or skips:
// its name property, or "<stack>-<logical id>".
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
				return truncName(dp.o.Prefix+s, 64)
			}
		}
	}
	if typ == typeESM {
		sum := sha256.Sum256([]byte(run.name + "/" + id))
		h := hex.EncodeToString(sum[:16])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	return truncName(run.name+"-"+id, 64)
}

func truncName(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return s[:max-len(suffix)] + suffix
}

// synthAttr is a Fn::GetAtt value of a resource this package handles or skips.
func (dp *deployer) synthAttr(run *stackRun, id, attr string) (string, error) {
	r := run.resources[id]
	typ, _ := r["Type"].(string)
	name := run.physical[id]
	p, reg, acct := partition(dp.o.Region), dp.o.Region, dp.d.AccountID
	switch {
	case attr == "Arn" && typ == typeFunction:
		return "arn:" + p + ":lambda:" + reg + ":" + acct + ":function:" + name, nil
	case attr == "Arn" && typ == "AWS::IAM::Role":
		return "arn:" + p + ":iam::" + acct + ":role/" + name, nil
	case attr == "RoleId" && typ == "AWS::IAM::Role":
		sum := sha256.Sum256([]byte(name))
		return "AROA" + strings.ToUpper(hex.EncodeToString(sum[:8])), nil
	case attr == "Arn" && typ == "AWS::Logs::LogGroup":
		return "arn:" + p + ":logs:" + reg + ":" + acct + ":log-group:" + name + ":*", nil
	case attr == "Arn" && typ == typeScheduleGroup:
		return "arn:" + p + ":scheduler:" + reg + ":" + acct + ":schedule-group/" + name, nil
	case attr == "Arn" && typ == typeSchedule:
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
		svc := strings.ToLower(strings.Split(strings.TrimPrefix(typ, "AWS::"), "::")[0])
		return "arn:" + p + ":" + svc + ":" + reg + ":" + acct + ":" + name, nil
	}
	return "", fmt.Errorf("attribute %s of %s (%s) is not available offline", attr, id, typ)
}

// getAtt returns Fn::GetAtt values: read from the emulator for its resources, synthesized for the others.
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

func (dp *deployer) queueAttrs(ctx context.Context, url string) (map[string]string, error) {
	out, err := dp.c.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("queue attributes of %s: %w", url, err)
	}
	return out.Attributes, nil
}

// emulatorTemplate is the template the emulator's CloudFormation gets: the resources it serves,
// with references to the others replaced by their values.
func (dp *deployer) emulatorTemplate(run *stackRun) (string, error) {
	tpl := map[string]any{}
	for k, v := range run.art.Template {
		switch k {
		case "Resources", "Outputs", "Parameters", "Rules":
		default:
			tpl[k] = v
		}
	}
	if ps, ok := run.art.Template["Parameters"].(map[string]any); ok {
		keep := map[string]any{}
		for name, p := range ps {
			if name != "BootstrapVersion" {
				keep[name] = p
			}
		}
		if len(keep) > 0 {
			tpl["Parameters"] = keep
		}
	}
	resources := map[string]any{}
	for id, r := range run.resources {
		if run.place[id] != placeEmulator {
			continue
		}
		nr := map[string]any{}
		for k, v := range r {
			switch k {
			case "DependsOn":
				var deps []any
				switch x := v.(type) {
				case string:
					deps = []any{x}
				case []any:
					deps = x
				}
				var keep []any
				for _, dep := range deps {
					if s, _ := dep.(string); run.place[s] == placeEmulator {
						keep = append(keep, s)
					}
				}
				if len(keep) > 0 {
					nr[k] = keep
				}
			case "Properties":
				pv, err := dp.rewrite(run, v, id+".Properties")
				if err != nil {
					return "", err
				}
				nr[k] = pv
			default:
				nr[k] = v
			}
		}
		if typ, _ := r["Type"].(string); typ == typeQueue {
			props, _ := nr["Properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
				nr["Properties"] = props
			}
			if _, named := props["QueueName"]; !named {
				// The emulator's generated names lack the ".fifo" a FIFO queue needs; name every
				// queue as CloudFormation would, minus the random suffix.
				suffix := ""
				if fifo, _ := props["FifoQueue"].(bool); fifo || props["FifoQueue"] == "true" {
					suffix = ".fifo"
				}
				props["QueueName"] = truncName(run.name+"-"+id, 80-len(suffix)) + suffix
			}
		}
		resources[id] = nr
	}
	if len(resources) == 0 {
		// CloudFormation needs a resource; this one does nothing, and keeps the stack (and its
		// exports) visible to tools.
		resources["JobkitOfflinePlaceholder"] = map[string]any{"Type": "AWS::CloudFormation::WaitConditionHandle"}
	}
	tpl["Resources"] = resources
	if outs, ok := run.art.Template["Outputs"].(map[string]any); ok {
		newOuts := map[string]any{}
		for name, o := range outs {
			om, _ := o.(map[string]any)
			no := map[string]any{}
			for k, v := range om {
				switch k {
				case "Value":
					rv, err := dp.rewrite(run, v, "Outputs."+name+".Value")
					if err != nil {
						return "", err
					}
					no[k] = rv
				case "Export":
					ex, _ := v.(map[string]any)
					if n, ok := ex["Name"].(string); ok {
						no[k] = map[string]any{"Name": dp.o.Prefix + n}
					} else {
						no[k] = v
					}
				default:
					no[k] = v
				}
			}
			newOuts[name] = no
		}
		tpl["Outputs"] = newOuts
	}
	b, err := json.Marshal(tpl)
	if err != nil {
		return "", fmt.Errorf("deploy: stack %s: %w", run.name, err)
	}
	return string(b), nil
}

// rewrite replaces, in a value bound for the emulator, references to resources it does not
// create by their values, and prefixes imported export names.
func (dp *deployer) rewrite(run *stackRun, v any, path string) (any, error) {
	local := func(id string) bool {
		p, ok := run.place[id]
		return ok && p != placeEmulator
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if ref, ok := x["Ref"].(string); ok && local(ref) {
				return run.physical[ref], nil
			}
			if ga, ok := x["Fn::GetAtt"]; ok {
				var id, attr string
				switch a := ga.(type) {
				case []any:
					if len(a) == 2 {
						id, _ = a[0].(string)
						attr, _ = a[1].(string)
					}
				case string:
					id, attr, _ = strings.Cut(a, ".")
				}
				if local(id) {
					s, err := dp.synthAttr(run, id, attr)
					if err != nil {
						return nil, &ResolveError{Stack: run.name, Path: path, Reason: err.Error()}
					}
					return s, nil
				}
			}
			if iv, ok := x["Fn::ImportValue"].(string); ok {
				return map[string]any{"Fn::ImportValue": dp.o.Prefix + iv}, nil
			}
			if sub, ok := x["Fn::Sub"]; ok {
				var tmpl string
				var vars any
				switch a := sub.(type) {
				case string:
					tmpl = a
				case []any:
					if len(a) == 2 {
						tmpl, _ = a[0].(string)
						vars = a[1]
					}
				}
				varMap, _ := vars.(map[string]any)
				for _, name := range subNames(tmpl) {
					if _, isVar := varMap[name]; isVar {
						continue
					}
					id, attr, hasAttr := strings.Cut(name, ".")
					if !local(id) {
						continue
					}
					val := run.physical[id]
					if hasAttr {
						s, err := dp.synthAttr(run, id, attr)
						if err != nil {
							return nil, &ResolveError{Stack: run.name, Path: path, Reason: err.Error()}
						}
						val = s
					}
					tmpl = strings.ReplaceAll(tmpl, "${"+name+"}", val)
				}
				if vars != nil {
					rv, err := dp.rewrite(run, vars, path+".Fn::Sub")
					if err != nil {
						return nil, err
					}
					return map[string]any{"Fn::Sub": []any{tmpl, rv}}, nil
				}
				return map[string]any{"Fn::Sub": tmpl}, nil
			}
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			rv, err := dp.rewrite(run, val, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			rv, err := dp.rewrite(run, val, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

// createStack creates the stack on the emulator and waits until it is complete.
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
	deadline := time.Now().Add(dp.o.StackTimeout)
	delay := 50 * time.Millisecond
	for {
		out, err := dp.c.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(id)})
		if err != nil {
			return "", fmt.Errorf("deploy: stack %s: %w", name, err)
		}
		if len(out.Stacks) == 1 {
			st := out.Stacks[0]
			switch st.StackStatus {
			case cfntypes.StackStatusCreateComplete:
				return id, nil
			case cfntypes.StackStatusCreateInProgress:
			default:
				return "", &StackFailedError{Stack: name, Status: string(st.StackStatus), Reason: dp.failureReason(ctx, id, aws.ToString(st.StackStatusReason))}
			}
		}
		if time.Now().After(deadline) {
			return "", &StackFailedError{Stack: name, Status: "TIMEOUT", Reason: "not complete after " + dp.o.StackTimeout.String()}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

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
	stack := &dp.d.Stacks[len(dp.d.Stacks)-1]
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
			MaxReceiveCount     any    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(rp), &p); err == nil {
			q.DeadLetterARN = p.DeadLetterTargetArn
			if s, ok := scalarString(p.MaxReceiveCount); ok {
				q.MaxReceiveCount, _ = strconv.Atoi(s)
			}
		}
	}
	if parts := strings.Split(q.ARN, ":"); len(parts) == 6 && parts[4] != "" {
		dp.d.AccountID = parts[4] // the emulator's account, for the ARNs synthesized from now on
		run.res.account = parts[4]
	}
	return q, nil
}

func (dp *deployer) table(ctx context.Context, run *stackRun, id, name string) (Table, error) {
	t := Table{Stack: run.name, LogicalID: id, Name: name}
	out, err := dp.c.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return t, fmt.Errorf("deploy: stack %s: describe table %s: %w", run.name, name, err)
	}
	t.ARN = aws.ToString(out.Table.TableArn)
	props, _ := run.resources[id]["Properties"].(map[string]any)
	ttl, _ := props["TimeToLiveSpecification"].(map[string]any)
	if ttl != nil {
		spec, err := run.res.eval(ttl, id+".Properties.TimeToLiveSpecification")
		if err != nil {
			return t, err
		}
		sm, _ := spec.(map[string]any)
		attr, _ := sm["AttributeName"].(string)
		enabled := sm["Enabled"] == true || sm["Enabled"] == "true"
		if enabled && attr != "" {
			// The emulator's CloudFormation ignores TimeToLiveSpecification.
			if _, err := dp.c.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
				TableName:               aws.String(name),
				TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
			}); err != nil {
				return t, fmt.Errorf("deploy: stack %s: time to live of %s: %w", run.name, name, err)
			}
			t.TTLAttribute = attr
		}
	}
	return t, nil
}

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

// evalProps evaluates a local resource's properties.
func (dp *deployer) evalProps(run *stackRun, id string) (map[string]any, error) {
	props, _ := run.resources[id]["Properties"].(map[string]any)
	v, err := run.res.eval(props, id+".Properties")
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func intProp(props map[string]any, key string, def int) (int, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	s, ok := scalarString(v)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", key)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return int(f), nil
}

func (dp *deployer) function(run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	fn := Function{Stack: run.name, LogicalID: id, Name: run.physical[id], Env: map[string]string{}}
	fn.ARN, _ = dp.synthAttr(run, id, "Arn")
	fn.Handler, _ = props["Handler"].(string)
	fn.Runtime, _ = props["Runtime"].(string)
	if archs, ok := props["Architectures"].([]any); ok {
		for _, a := range archs {
			if s, ok := a.(string); ok {
				fn.Architectures = append(fn.Architectures, s)
			}
		}
	}
	bad := func(err error) error { return &ConfigError{Stack: run.name, LogicalID: id, Reason: err.Error()} }
	timeout, err := intProp(props, "Timeout", 3)
	if err != nil {
		return bad(err)
	}
	fn.Timeout = time.Duration(timeout) * time.Second
	if fn.MemoryMB, err = intProp(props, "MemorySize", 128); err != nil {
		return bad(err)
	}
	if fn.ReservedConcurrency, err = intProp(props, "ReservedConcurrentExecutions", 0); err != nil {
		return bad(err)
	}
	if env, ok := props["Environment"].(map[string]any); ok {
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			s, ok := scalarString(v)
			if !ok {
				return bad(fmt.Errorf("environment variable %s is not a string", k))
			}
			fn.Env[k] = s
		}
	}
	if lc, ok := props["LoggingConfig"].(map[string]any); ok {
		// Lambda tells the runtime the log format and levels through these variables.
		if f, _ := lc["LogFormat"].(string); f != "" {
			fn.Env["AWS_LAMBDA_LOG_FORMAT"] = f
		}
		if l, _ := lc["ApplicationLogLevel"].(string); l != "" {
			fn.Env["AWS_LAMBDA_LOG_LEVEL"] = l
		}
	}
	meta, _ := run.resources[id]["Metadata"].(map[string]any)
	fn.Source, _ = meta[SourceMetadataKey].(string)
	fn.AssetPath, _ = meta["aws:asset:path"].(string)
	dp.d.Functions = append(dp.d.Functions, fn)
	return nil
}

func (dp *deployer) mapping(run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: fmt.Sprintf(format, args...)}
	}
	m := EventSourceMapping{Stack: run.name, LogicalID: id, UUID: run.physical[id], Enabled: true}
	m.QueueARN, _ = props["EventSourceArn"].(string)
	if parts := strings.Split(m.QueueARN, ":"); len(parts) != 6 || parts[2] != "sqs" {
		dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id, Type: typeESM, Reason: "only SQS event sources run offline (source " + m.QueueARN + ")"})
		return nil
	}
	m.Function, _ = props["FunctionName"].(string)
	if m.Function == "" {
		return bad("FunctionName is required")
	}
	if m.BatchSize, err = intProp(props, "BatchSize", 10); err != nil {
		return bad("%v", err)
	}
	window, err := intProp(props, "MaximumBatchingWindowInSeconds", 0)
	if err != nil {
		return bad("%v", err)
	}
	m.MaximumBatchingWindow = time.Duration(window) * time.Second
	if sc, ok := props["ScalingConfig"].(map[string]any); ok {
		if m.MaximumConcurrency, err = intProp(sc, "MaximumConcurrency", 0); err != nil {
			return bad("%v", err)
		}
	}
	if types, ok := props["FunctionResponseTypes"].([]any); ok {
		for _, t := range types {
			if t == "ReportBatchItemFailures" {
				m.ReportBatchItemFailures = true
			}
		}
	}
	if e, ok := props["Enabled"]; ok {
		m.Enabled = e == true || e == "true"
	}
	dp.d.Mappings = append(dp.d.Mappings, m)
	return nil
}

// linkMappings resolves each mapping's function and queue, and checks what Lambda checks when it
// creates a mapping: the queue's visibility timeout is at least the function's timeout.
func (dp *deployer) linkMappings(ctx context.Context) error {
	for i := range dp.d.Mappings {
		m := &dp.d.Mappings[i]
		fn := dp.d.FunctionByName(m.Function)
		if fn == nil {
			return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: "function " + m.Function + " is not in the deployment"}
		}
		m.Function = fn.Name
		if q := dp.d.QueueByARN(m.QueueARN); q != nil {
			m.QueueURL = q.URL
			if q.VisibilityTimeout < fn.Timeout {
				return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: fmt.Sprintf(
					"queue visibility timeout %s is less than function %s timeout %s", q.VisibilityTimeout, fn.Name, fn.Timeout)}
			}
			continue
		}
		// A queue of another deployment on the same emulator.
		parts := strings.Split(m.QueueARN, ":")
		out, err := dp.c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
		if err != nil {
			return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: "queue " + m.QueueARN + ": " + err.Error()}
		}
		m.QueueURL = aws.ToString(out.QueueUrl)
	}
	return nil
}

// build builds each function's bootstrap for this machine.
func (dp *deployer) build(ctx context.Context, cdkOut string) error {
	for i := range dp.d.Functions {
		fn := &dp.d.Functions[i]
		out := filepath.Join(dp.o.BuildDir, fn.Stack, fn.LogicalID, "bootstrap")
		if fn.Source == "" {
			asset := filepath.Join(cdkOut, fn.AssetPath, "bootstrap")
			if fn.AssetPath == "" {
				return &ConfigError{Stack: fn.Stack, LogicalID: fn.LogicalID, Reason: "no " + SourceMetadataKey + " metadata and no asset: nothing to run"}
			}
			if err := checkRunnable(asset); err != nil {
				return &ConfigError{Stack: fn.Stack, LogicalID: fn.LogicalID, Reason: "no " + SourceMetadataKey + " metadata to build from, and the asset cannot run here: " + err.Error()}
			}
			fn.Bootstrap = asset
			continue
		}
		start := time.Now()
		if err := buildBootstrap(ctx, filepath.Join(dp.o.ModuleDir, filepath.FromSlash(dp.o.sourceDir(fn.Source))), out); err != nil {
			return &ConfigError{Stack: fn.Stack, LogicalID: fn.LogicalID, Reason: err.Error()}
		}
		fn.Bootstrap = out
		dp.log.Info("function built", "function", fn.Name, "source", fn.Source, "bootstrap", out, "duration_ms", time.Since(start).Milliseconds())
	}
	return nil
}

var errNotExecutable = errors.New("not an executable file")

func checkRunnable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errNotExecutable
	}
	return checkArch(path)
}
