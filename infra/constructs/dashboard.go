package constructs

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The jobs runtime's metrics (CloudWatch Embedded Metric Format lines), as package jobs names them.
const (
	MetricsNamespace = contract.MetricNamespace // "Jobkit"
	MetricsDimension = contract.DimensionQueue  // "Queue": the consumed queue's name

	MetricSucceeded = contract.MetricSucceeded // count
	MetricRetried   = contract.MetricRetried   // count
	MetricSnoozed   = contract.MetricSnoozed   // count
	MetricDead      = contract.MetricDead      // count: dead-lettered by the runtime
	MetricDuration  = contract.MetricDuration  // milliseconds per job
)

// DashboardProps configures a Dashboard.
type DashboardProps struct {
	// Queues get one row each: depth, oldest message age, job outcomes, job duration.
	Queues []*JobQueue
	// Workers add a row of function invocations, errors and throttles. Optional.
	Workers []*Worker
	// ContainerWorkers add a row of running and desired tasks, and CPU and memory. Optional.
	ContainerWorkers []*ContainerWorker
	// OutboxForwarders add a row of the forwarders' invocations and errors, and their iterator
	// age (how long written jobs wait to be sent). Optional.
	OutboxForwarders []*OutboxForwarder
}

// Dashboard is a CloudWatch dashboard over JobQueues and their Workers: queue and dead-letter
// depth, oldest message age, the outcomes the jobs runtime reports (Succeeded, Retried, Snoozed,
// Dead) and job duration, and the functions' invocations, errors and throttles.
type Dashboard struct {
	constructs.Construct
	Dashboard awscloudwatch.Dashboard
}

// JobMetric returns one of the jobs runtime's metrics for a queue (Sum over 5 minutes for counts;
// set the statistic with With for Duration).
func JobMetric(q *JobQueue, name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricsNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{MetricsDimension: q.Queue.QueueName()},
		Statistic:     jsii.String("Sum"),
		Period:        awscdk.Duration_Minutes(jsii.Number(5)),
		Label:         jsii.String(name),
	})
}

// byKind returns the search expression of the runtime's metrics names per kind of q's jobs, with
// statistic stat over 5 minutes.
func byKind(q *JobQueue, names []string, stat string) awscloudwatch.MathExpression {
	var or []string
	for _, n := range names {
		or = append(or, fmt.Sprintf("MetricName=%q", n))
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s,%s} %s="%s" (%s)', '%s', 300)`,
			MetricsNamespace, contract.DimensionKind, MetricsDimension, MetricsDimension, *q.Queue.QueueName(), strings.Join(or, " OR "), stat)),
		Label:        jsii.String(""),
		Period:       awscdk.Duration_Minutes(jsii.Number(5)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{},
	})
}

// kindWidgets are q's jobs per kind (the runtime's Kind dimension): outcomes, and the p99 time.
func kindWidgets(q *JobQueue) []awscloudwatch.IWidget {
	return []awscloudwatch.IWidget{
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(q.Name + ": jobs by kind"),
			Width: jsii.Number(12),
			Left:  &[]awscloudwatch.IMetric{byKind(q, []string{MetricSucceeded, MetricRetried, MetricDead}, "Sum")},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(q.Name + ": job duration by kind, p99 (ms)"),
			Width: jsii.Number(12),
			Left:  &[]awscloudwatch.IMetric{byKind(q, []string{MetricDuration}, "p99")},
		}),
	}
}

// NewDashboard defines a Dashboard. It panics if props has no queue.
func NewDashboard(scope constructs.Construct, id string, props *DashboardProps) *Dashboard {
	if props == nil || len(props.Queues) == 0 {
		panic(fmt.Sprintf("jobkit: Dashboard %q needs at least one queue", id))
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	d := awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	minutes5 := awscdk.Duration_Minutes(jsii.Number(5))
	for _, q := range props.Queues {
		d.AddWidgets(kindWidgets(q)...)
		d.AddWidgets(
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
				Title: jsii.String(q.Name + ": depth"),
				Width: jsii.Number(6),
				Left: &[]awscloudwatch.IMetric{
					q.Queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Label: jsii.String("waiting"), Statistic: jsii.String("Maximum"), Period: minutes5}),
					q.Queue.MetricApproximateNumberOfMessagesNotVisible(&awscloudwatch.MetricOptions{Label: jsii.String("running or backing off"), Statistic: jsii.String("Maximum"), Period: minutes5}),
					q.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Label: jsii.String("dead-letter queue"), Statistic: jsii.String("Maximum"), Period: minutes5}),
				},
			}),
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
				Title: jsii.String(q.Name + ": oldest job age (s)"),
				Width: jsii.Number(6),
				Left: &[]awscloudwatch.IMetric{
					q.Queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Label: jsii.String("oldest"), Statistic: jsii.String("Maximum"), Period: minutes5}),
				},
			}),
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
				Title: jsii.String(q.Name + ": jobs"),
				Width: jsii.Number(6),
				Left: &[]awscloudwatch.IMetric{
					JobMetric(q, MetricSucceeded), JobMetric(q, MetricRetried),
					JobMetric(q, MetricSnoozed), JobMetric(q, MetricDead),
				},
			}),
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
				Title: jsii.String(q.Name + ": job duration (ms)"),
				Width: jsii.Number(6),
				Left: &[]awscloudwatch.IMetric{
					JobMetric(q, MetricDuration).With(&awscloudwatch.MetricOptions{Statistic: jsii.String("p50"), Label: jsii.String("p50")}),
					JobMetric(q, MetricDuration).With(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Label: jsii.String("p99")}),
					JobMetric(q, MetricDuration).With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Label: jsii.String("max")}),
				},
			}),
		)
	}
	if len(props.Workers) > 0 {
		var invocations, errs []awscloudwatch.IMetric
		for _, w := range props.Workers {
			invocations = append(invocations, w.Function.MetricInvocations(&awscloudwatch.MetricOptions{Label: jsii.String(w.Name), Period: minutes5}))
			errs = append(errs,
				w.Function.MetricErrors(&awscloudwatch.MetricOptions{Label: jsii.String(w.Name + " errors"), Period: minutes5}),
				w.Function.MetricThrottles(&awscloudwatch.MetricOptions{Label: jsii.String(w.Name + " throttles"), Period: minutes5}))
		}
		d.AddWidgets(
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("functions: invocations"), Width: jsii.Number(12), Left: &invocations}),
			awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String("functions: errors and throttles"), Width: jsii.Number(12), Left: &errs}),
		)
	}
	if len(props.ContainerWorkers) > 0 {
		d.AddWidgets(containerWidgets(props.ContainerWorkers)...)
	}
	if len(props.OutboxForwarders) > 0 {
		d.AddWidgets(outboxWidgets(props.OutboxForwarders)...)
	}
	return &Dashboard{Construct: c, Dashboard: d}
}
