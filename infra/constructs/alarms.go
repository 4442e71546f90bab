package constructs

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// newAlarm defines the alarms of jobkit's constructs: metric above threshold in one period, no
// data not breaching, with actions.
func newAlarm(scope constructs.Construct, id, description string, metric awscloudwatch.IMetric, threshold float64, actions []awscloudwatch.IAlarmAction) awscloudwatch.Alarm {
	a := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	for _, act := range actions {
		a.AddAlarmAction(act)
	}
	return a
}
