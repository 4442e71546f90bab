package constructs

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Defaults of ContainerWorkerProps.
const (
	DefaultContainerCPU       = 1024 // CPU units (1 vCPU)
	DefaultContainerMemoryMiB = 2048
	DefaultMaxTasks           = 4
	DefaultDrainTimeout       = contract.DefaultDrainTimeout
	// StopTimeoutMargin is how much longer than the drain budget ECS waits before SIGKILL: the
	// time for the process to exit after the consumer has returned.
	StopTimeoutMargin = 5 * time.Second
	// DefaultCloudWatchAgentImage is the CloudWatch agent the tasks run beside the worker
	// (ContainerWorkerProps.CloudWatchAgentImage): AWS's image, by its Docker Hub name.
	DefaultCloudWatchAgentImage = "amazon/cloudwatch-agent:1.300064.0b1337"
	// CloudWatchAgentEndpoint is where the worker sends its EMF lines: the agent's EMF listener
	// in the task (awsvpc: the task's containers share localhost).
	CloudWatchAgentEndpoint = "tcp://127.0.0.1:25888"
	// cloudWatchAgentConfig turns on the agent's EMF listener (tcp and udp 25888), as AWS
	// documents for a sidecar.
	cloudWatchAgentConfig = `{"logs":{"metrics_collected":{"emf":{}}}}`
)

// ContainerWorkerProps configures a ContainerWorker. Source and Queue are required.
type ContainerWorkerProps struct {
	// Source is the Go main package the container runs (it calls jobs.Start, or runs a
	// jobs.Consumer); it is built for linux/arm64 at synth.
	Source GoSource
	// Queue is the JobQueue the tasks consume. Its visibility timeout is the heartbeat's period
	// (a beat every third of it): at least contract.MinConsumerVisibilityTimeout.
	Queue *JobQueue
	// IdempotencyTable and Kinds: as WorkerProps (the same grant, on the task role).
	IdempotencyTable *IdempotencyTable
	Kinds            []string
	// PayloadBucket: as WorkerProps (JOBKIT_PAYLOAD_BUCKET, the grant on the task role).
	PayloadBucket *PayloadBucket

	// CPU units and memory of a task (a Fargate combination). Defaults DefaultContainerCPU and
	// DefaultContainerMemoryMiB.
	CPU       int
	MemoryMiB int
	// Concurrency is how many jobs a task runs at once (JOBKIT_CONCURRENCY). Default
	// DefaultConcurrency.
	Concurrency int
	// DrainTimeout is the consumer's drain budget after SIGTERM (JOBKIT_DRAIN_TIMEOUT); the
	// container's stop timeout is this plus StopTimeoutMargin, at most ECS's 120 s. Default
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// BackoffBase and BackoffCap: as WorkerProps.
	BackoffBase time.Duration
	BackoffCap  time.Duration

	// MinTasks and MaxTasks bound the service's scaling. MinTasks 0 (the default) lets an idle
	// queue cost no task. Default MaxTasks DefaultMaxTasks.
	MinTasks int
	MaxTasks int
	// BacklogPerTask is how many jobs (visible and in flight) one task is meant to hold: the
	// service runs ceil(backlog / BacklogPerTask) tasks, within the bounds. Default Concurrency.
	BacklogPerTask int

	// Vpc to run the tasks in; default a new VPC with public subnets only (no NAT gateway: the
	// tasks get public IPs to reach SQS, ECR and CloudWatch) and flow logs.
	Vpc awsec2.IVpc
	// LogRetention of the tasks' log group. Default DefaultLogRetention.
	LogRetention awslogs.RetentionDays
	// Environment adds variables; a JOBKIT_ name set by the construct cannot be overridden.
	Environment map[string]string
	// CloudWatchAgentImage is the image of the CloudWatch agent sidecar that takes the worker's
	// EMF lines (JOBKIT_METRICS_ENDPOINT) and writes them to the task's log group, from which
	// CloudWatch extracts the metrics: the awslogs driver does not (only Lambda's output and
	// the agent's log events are read as EMF). Default DefaultCloudWatchAgentImage. Tasks that
	// reach AWS only through VPC endpoints cannot pull it, and Docker Hub limits anonymous pulls:
	// copy the image into a private ECR repository and name it here, or set NoCloudWatchAgent.
	CloudWatchAgentImage string
	// NoCloudWatchAgent leaves the sidecar out: the worker writes its EMF lines to stdout, where
	// the awslogs driver stores them as plain log lines (no metrics, no per-kind widgets).
	NoCloudWatchAgent bool
	// AlarmActions are added to the worker's alarm (MemoryAlarm), e.g. an SNS topic's action.
	// Optional. The queue's AgeAlarm tells when the tasks fall behind.
	AlarmActions []awscloudwatch.IAlarmAction
}

// ContainerWorker runs the jobs of a JobQueue in containers: an ECS Fargate service (arm64) of
// the Source's binary running a jobs.Consumer, with the environment jobs.ConfigFromEnv and
// jobs.ConsumerOptionsFromEnv read, a task role scoped as a Worker's (consume and change
// visibility on its queue, send to its dead-letter queue, its kinds' idempotency records), a log
// group, a stop timeout above the drain budget, and step scaling on the queue's backlog per task
// (visible plus in-flight messages), down to MinTasks (zero by default) and back. Its metrics go
// through a CloudWatch agent sidecar (Agent) into its log group, where CloudWatch extracts them.
// Like a Worker, the first worker of a queue gives it its redrive recorder (a Lambda function:
// see RedriveRecorder), which names this worker as the function that never answered.
type ContainerWorker struct {
	constructs.Construct

	Name           string
	Cluster        awsecs.Cluster
	TaskDefinition awsecs.FargateTaskDefinition
	Container      awsecs.ContainerDefinition
	// Agent is the CloudWatch agent sidecar that takes the worker's EMF lines (nil with
	// NoCloudWatchAgent).
	Agent    awsecs.ContainerDefinition
	Service  awsecs.FargateService
	TaskRole awsiam.Role
	LogGroup awslogs.LogGroup
	// Recorder is the queue's redrive recorder when this worker defined it (see Worker.Recorder).
	Recorder *RedriveRecorder
	// Environment is the container's environment (JOBKIT_ names and Props.Environment).
	Environment map[string]string
	// StopTimeout is the container's stop timeout; DrainTimeout the consumer's budget.
	StopTimeout, DrainTimeout time.Duration
	MinTasks, MaxTasks        int
	BacklogPerTask            int
	// MemoryAlarm fires when a task's memory use reaches MemoryAlarmPercent of its limit.
	MemoryAlarm awscloudwatch.Alarm
}

// MemoryAlarmPercent is the memory use, in percent of a task's limit, at which a ContainerWorker's
// MemoryAlarm fires: ECS stops a task that passes its limit.
const MemoryAlarmPercent = 90

// NewContainerWorker defines a ContainerWorker. It panics with a *ConfigError when the props
// cannot deploy or would not keep the consumer's promises (a drain budget ECS would cut short, a
// visibility timeout too short for the heartbeat).
func NewContainerWorker(scope constructs.Construct, id string, props *ContainerWorkerProps) *ContainerWorker {
	p, where := settle(scope, id, props)
	c := constructs.NewConstruct(scope, jsii.String(id))
	w := &ContainerWorker{
		Construct: c, Name: id, DrainTimeout: p.DrainTimeout, StopTimeout: p.DrainTimeout + StopTimeoutMargin,
		MinTasks: p.MinTasks, MaxTasks: p.MaxTasks, BacklogPerTask: p.BacklogPerTask,
	}
	w.Environment = p.environment(id)

	w.LogGroup = awslogs.NewLogGroup(c, jsii.String("Logs"), &awslogs.LogGroupProps{Retention: p.LogRetention})
	if !p.NoCloudWatchAgent {
		w.Environment[contract.EnvMetricsEndpoint] = CloudWatchAgentEndpoint
		w.Environment[contract.EnvMetricsLogGroup] = *w.LogGroup.LogGroupName()
	}
	// ECS may assume it only for this account's tasks (the confused deputy: aws:SourceAccount and
	// aws:SourceArn, as the ECS documentation recommends for task roles).
	stack := awscdk.Stack_Of(c)
	w.TaskRole = awsiam.NewRole(c, jsii.String("TaskRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
				"ArnLike": map[string]any{"aws:SourceArn": awscdk.Fn_Join(jsii.String(""), &[]*string{
					jsii.String("arn:"), stack.Partition(), jsii.String(":ecs:"), stack.Region(), jsii.String(":"), stack.Account(), jsii.String(":*")})},
			},
		}),
		Description: jsii.String(fmt.Sprintf("jobkit container worker %s", where)),
	})
	p.Queue.Queue.GrantConsumeMessages(w.TaskRole)
	p.Queue.Queue.Grant(w.TaskRole, jsii.String("sqs:ListQueueTags")) // its pause (contract.TagPaused)
	p.Queue.DLQ.GrantSendMessages(w.TaskRole)
	if p.IdempotencyTable != nil {
		grantIdempotency(c, w.TaskRole, p.IdempotencyTable, p.Kinds, nil)
	}
	if p.PayloadBucket != nil {
		p.PayloadBucket.grantWorker(w.TaskRole, p.Queue)
	}
	w.defineTask(p)
	w.defineService(p)
	w.scale(p)
	w.Recorder = defineRecorder(c, recorderProps{
		queue: p.Queue, moduleDir: p.Source.ModuleDir, worker: id, payloads: p.PayloadBucket, logRetention: p.LogRetention,
	})
	w.MemoryAlarm = newAlarm(w.Construct, "MemoryAlarm",
		fmt.Sprintf("jobkit %s: a task used more than %d%% of its memory: ECS stops a task that passes its limit, and the jobs it held come back after their visibility timeout", w.Name, MemoryAlarmPercent),
		w.Service.MetricMemoryUtilization(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum")}),
		MemoryAlarmPercent, p.AlarmActions)
	return w
}

// defineTask defines the arm64 task definition and its one container, and names the Go source
// in the task definition's metadata (the offline stack builds and runs it as a local process).
func (w *ContainerWorker) defineTask(p ContainerWorkerProps) {
	w.TaskDefinition = awsecs.NewFargateTaskDefinition(w.Construct, jsii.String("Task"), &awsecs.FargateTaskDefinitionProps{
		Cpu:            jsii.Number(p.CPU),
		MemoryLimitMiB: jsii.Number(p.MemoryMiB),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
		TaskRole: w.TaskRole,
	})
	env := sortedEnv(w.Environment)
	w.Container = w.TaskDefinition.AddContainer(jsii.String("Worker"), &awsecs.ContainerDefinitionOptions{
		Image:       p.Source.containerImage(),
		Environment: &env,
		StopTimeout: awscdk.Duration_Seconds(jsii.Number(w.StopTimeout.Seconds())),
		Logging: awsecs.LogDrivers_AwsLogs(&awsecs.AwsLogDriverProps{
			StreamPrefix: jsii.String("worker"), LogGroup: w.LogGroup,
		}),
	})
	if !p.NoCloudWatchAgent {
		w.defineAgent(p)
	}
	cfn := w.TaskDefinition.Node().DefaultChild().(awsecs.CfnTaskDefinition)
	cfn.AddMetadata(jsii.String(SourceMetadataKey), jsii.String(path.Clean(p.Source.Package)))
	cfn.AddMetadata(jsii.String(contract.ContainerMetadataKey), w.Container.ContainerName())
	if mod := p.Source.assemblyRelDir(w.TaskDefinition); mod != "" {
		cfn.AddMetadata(jsii.String(ModuleMetadataKey), jsii.String(mod))
	}
	cdknag.NagSuppressions_AddResourceSuppressions(w.TaskDefinition, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-ECS2"),
		Reason: jsii.String("the environment holds queue URLs, a table name and tuning that jobs.ConfigFromEnv reads, " +
			"the same values a Worker function's environment holds; no secret"),
	}}, jsii.Bool(true))
	// The execution role pulls the image: ecr:GetAuthorizationToken has no resource to scope to.
	cdknag.NagSuppressions_AddResourceSuppressions(w.TaskDefinition, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("ecr:GetAuthorizationToken applies to no resource (IAM requires \"*\"); the pull actions are scoped to the asset repository"),
		AppliesTo: &[]any{jsii.String("Resource::*")},
	}}, jsii.Bool(true))
}

// defineAgent adds the CloudWatch agent sidecar: its EMF listener takes the worker's metric lines
// and writes them to the worker's log group (the task role may write there), where CloudWatch
// extracts the metrics. The worker starts after it; it is not essential: a task whose agent stops
// keeps running its jobs, their metrics dropped.
func (w *ContainerWorker) defineAgent(p ContainerWorkerProps) {
	w.Agent = w.TaskDefinition.AddContainer(jsii.String("CloudWatchAgent"), &awsecs.ContainerDefinitionOptions{
		Image:                awsecs.ContainerImage_FromRegistry(jsii.String(p.CloudWatchAgentImage), nil),
		Essential:            jsii.Bool(false),
		MemoryReservationMiB: jsii.Number(64),
		Environment:          &map[string]*string{"CW_CONFIG_CONTENT": jsii.String(cloudWatchAgentConfig)},
		Logging: awsecs.LogDrivers_AwsLogs(&awsecs.AwsLogDriverProps{
			StreamPrefix: jsii.String("cwagent"), LogGroup: w.LogGroup,
		}),
	})
	w.Container.AddContainerDependencies(&awsecs.ContainerDependency{Container: w.Agent, Condition: awsecs.ContainerDependencyCondition_START})
	w.LogGroup.GrantWrite(w.TaskRole)
}

// defineService defines the cluster (Container Insights on: the dashboard's task counts), and the
// Fargate service, in p.Vpc or a public-subnet VPC of its own with flow logs.
func (w *ContainerWorker) defineService(p ContainerWorkerProps) {
	vpc := p.Vpc
	if vpc == nil {
		own := awsec2.NewVpc(w.Construct, jsii.String("Vpc"), &awsec2.VpcProps{
			MaxAzs:      jsii.Number(2),
			NatGateways: jsii.Number(0),
			SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
				Name: jsii.String("Public"), SubnetType: awsec2.SubnetType_PUBLIC, CidrMask: jsii.Number(24),
			}},
		})
		own.AddFlowLog(jsii.String("FlowLog"), nil)
		vpc = own
	}
	w.Cluster = awsecs.NewCluster(w.Construct, jsii.String("Cluster"), &awsecs.ClusterProps{
		Vpc: vpc, ContainerInsightsV2: awsecs.ContainerInsights_ENABLED,
	})
	public := p.Vpc == nil
	w.Service = awsecs.NewFargateService(w.Construct, jsii.String("Service"), &awsecs.FargateServiceProps{
		Cluster:        w.Cluster,
		TaskDefinition: w.TaskDefinition,
		DesiredCount:   jsii.Number(p.MinTasks),
		AssignPublicIp: jsii.Bool(public),
		// A deploy may stop every old task at once: each drains, releasing its jobs.
		MinHealthyPercent: jsii.Number(0),
		MaxHealthyPercent: jsii.Number(200),
		CircuitBreaker:    &awsecs.DeploymentCircuitBreaker{Rollback: jsii.Bool(true)},
	})
}

// scale adds step scaling on the queue's backlog (visible plus in-flight messages): exactly
// ceil(backlog / BacklogPerTask) tasks within MinTasks..MaxTasks, one-minute periods.
func (w *ContainerWorker) scale(p ContainerWorkerProps) {
	q := p.Queue.Queue
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	backlog := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("visible + inflight"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"visible":  q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
			"inflight": q.MetricApproximateNumberOfMessagesNotVisible(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}),
		},
		Label:  jsii.String("backlog"),
		Period: minute,
	})
	scalable := w.Service.AutoScaleTaskCount(&awsapplicationautoscaling.EnableScalingProps{
		MinCapacity: jsii.Number(p.MinTasks), MaxCapacity: jsii.Number(p.MaxTasks),
	})
	scalable.ScaleOnMetric(jsii.String("Backlog"), &awsapplicationautoscaling.BasicStepScalingPolicyProps{
		Metric:         backlog,
		ScalingSteps:   backlogSteps(p.MinTasks, p.MaxTasks, p.BacklogPerTask),
		AdjustmentType: awsapplicationautoscaling.AdjustmentType_EXACT_CAPACITY,
		Cooldown:       minute,
	})
}

// backlogSteps are the exact task counts for a backlog: 0 jobs → minTasks; then one task per
// perTask jobs (rounded up), up to maxTasks.
func backlogSteps(minTasks, maxTasks, perTask int) *[]*awsapplicationautoscaling.ScalingInterval {
	steps := []*awsapplicationautoscaling.ScalingInterval{{Upper: jsii.Number(1), Change: jsii.Number(minTasks)}}
	for n := 1; n <= maxTasks; n++ {
		iv := &awsapplicationautoscaling.ScalingInterval{
			Lower: jsii.Number((n-1)*perTask + 1), Change: jsii.Number(max(n, minTasks)),
		}
		if n < maxTasks {
			iv.Upper = jsii.Number(n*perTask + 1)
		}
		steps = append(steps, iv)
	}
	return &steps
}

// environment returns the container's environment: what jobs.ConfigFromEnv and
// jobs.ConsumerOptionsFromEnv read, the worker's name, and Props.Environment.
func (p ContainerWorkerProps) environment(name string) map[string]string {
	env := maps.Clone(p.Environment)
	if env == nil {
		env = map[string]string{}
	}
	q := p.Queue
	env[contract.EnvQueueURL] = *q.Queue.QueueUrl()
	env[contract.EnvDLQURL] = *q.DLQ.QueueUrl()
	env[contract.EnvMaxAttempts] = strconv.Itoa(q.MaxAttempts)
	env[contract.EnvMaxReceiveCount] = strconv.Itoa(q.MaxReceiveCount)
	env[contract.EnvVisibilityTimeout] = strconv.Itoa(int(q.VisibilityTimeout / time.Second))
	env[contract.EnvConcurrency] = strconv.Itoa(p.Concurrency)
	env[contract.EnvBackoffBase] = p.BackoffBase.String()
	env[contract.EnvBackoffCap] = p.BackoffCap.String()
	env[contract.EnvDrainTimeout] = p.DrainTimeout.String()
	env[contract.EnvWorkerName] = name
	if p.IdempotencyTable != nil {
		env[contract.EnvIdempotencyTable] = *p.IdempotencyTable.Table.TableName()
		env[contract.EnvIdempotencyExpiry] = (q.RetentionPeriod + DLQRetentionPeriod).String()
	}
	if p.PayloadBucket != nil {
		env[contract.EnvPayloadBucket] = *p.PayloadBucket.Bucket.BucketName()
	}
	return env
}

func (p ContainerWorkerProps) withDefaults() ContainerWorkerProps {
	p.CPU = cmp.Or(p.CPU, DefaultContainerCPU)
	p.MemoryMiB = cmp.Or(p.MemoryMiB, DefaultContainerMemoryMiB)
	p.Concurrency = cmp.Or(p.Concurrency, DefaultConcurrency)
	p.DrainTimeout = cmp.Or(p.DrainTimeout, DefaultDrainTimeout)
	p.BackoffBase = cmp.Or(p.BackoffBase, DefaultBackoffBase)
	p.BackoffCap = cmp.Or(p.BackoffCap, DefaultBackoffCap)
	p.CloudWatchAgentImage = cmp.Or(p.CloudWatchAgentImage, DefaultCloudWatchAgentImage)
	p.MaxTasks = cmp.Or(p.MaxTasks, max(DefaultMaxTasks, p.MinTasks))
	p.BacklogPerTask = cmp.Or(p.BacklogPerTask, p.Concurrency)
	p.LogRetention = cmp.Or(p.LogRetention, DefaultLogRetention)
	return p
}

// check returns why the props (with defaults applied) cannot deploy, or "".
func (p ContainerWorkerProps) check() string {
	q := p.Queue
	switch {
	case q == nil:
		return "ContainerWorkerProps.Queue is required"
	case p.Source.validate() != nil:
		return p.Source.validate().Error()
	case recorderCheck(q, p.Source.ModuleDir, nil) != "":
		return recorderCheck(q, p.Source.ModuleDir, nil)
	case q.VisibilityTimeout < contract.MinConsumerVisibilityTimeout:
		return fmt.Sprintf("the visibility timeout of queue %s (%s) is shorter than %s: the heartbeat extends it every third, "+
			"and a beat must land before it lapses", q.Name, q.VisibilityTimeout, contract.MinConsumerVisibilityTimeout)
	case p.DrainTimeout < time.Second || p.DrainTimeout+StopTimeoutMargin > contract.MaxStopTimeout || p.DrainTimeout%time.Second != 0:
		return fmt.Sprintf("DrainTimeout %s must be whole seconds from 1s to %s: the stop timeout (%s more) is at most %s on Fargate",
			p.DrainTimeout, contract.MaxStopTimeout-StopTimeoutMargin, StopTimeoutMargin, contract.MaxStopTimeout)
	case q.FIFO && q.MaxReceiveCount < contract.MinFIFOMaxReceiveCount(MaxFIFOBatchSize, q.MaxAttempts):
		return fifoReceivesShort(q, MaxFIFOBatchSize) // the consumer receives up to 10 at once
	case p.MinTasks < 0 || p.MaxTasks < 1 || p.MaxTasks < p.MinTasks:
		return fmt.Sprintf("tasks %d..%d: want 0 <= MinTasks <= MaxTasks, MaxTasks >= 1", p.MinTasks, p.MaxTasks)
	case p.BacklogPerTask < 1:
		return fmt.Sprintf("BacklogPerTask %d must be at least 1", p.BacklogPerTask)
	}
	if reason := checkRuntime(q, p.Concurrency, p.BackoffBase, p.BackoffCap, p.PayloadBucket, p.Environment, p.Kinds); reason != "" {
		return reason
	}
	return ""
}

// TaskCountMetric returns the service's running (or desired, with "DesiredTaskCount") task count
// from Container Insights, which the construct turns on for its cluster.
func (w *ContainerWorker) TaskCountMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String("ECS/ContainerInsights"),
		MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{
			"ClusterName": w.Cluster.ClusterName(), "ServiceName": w.Service.ServiceName(),
		},
		Statistic: jsii.String("Maximum"),
		Period:    awscdk.Duration_Minutes(jsii.Number(1)),
		Label:     jsii.String(w.Name + " " + strings.TrimSuffix(name, "TaskCount")),
	})
}

// containerWidgets is the dashboard row of container workers: tasks running and desired, CPU and
// memory utilisation.
func containerWidgets(ws []*ContainerWorker) []awscloudwatch.IWidget {
	var tasks, usage []awscloudwatch.IMetric
	minutes5 := awscdk.Duration_Minutes(jsii.Number(5))
	for _, w := range ws {
		tasks = append(tasks, w.TaskCountMetric("RunningTaskCount"), w.TaskCountMetric("DesiredTaskCount"))
		usage = append(usage,
			w.Service.MetricCpuUtilization(&awscloudwatch.MetricOptions{Label: jsii.String(w.Name + " CPU %"), Period: minutes5}),
			w.Service.MetricMemoryUtilization(&awscloudwatch.MetricOptions{Label: jsii.String(w.Name + " memory %"), Period: minutes5}))
	}
	return []awscloudwatch.IWidget{
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("containers: tasks"), Width: jsii.Number(12), Left: &tasks}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("containers: CPU and memory"), Width: jsii.Number(12), Left: &usage}),
	}
}
