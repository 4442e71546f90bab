package scheduler

import (
	"fmt"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// QueueARN derives an SQS queue's ARN from its URL. The path is /<account>/<name> (AWS, moto,
// LocalStack's default), or LocalStack's path strategy /queue/<region>/<account>/<name>, whose
// region then wins over the host's. Otherwise the region comes from the host for AWS URLs (sqs.<region>.amazonaws.com[.cn],
// sqs.<region>.api.aws, the legacy <region>.queue.amazonaws.com and queue.amazonaws.com) and
// LocalStack's sqs.<region>.localhost.localstack.cloud; for any other host (an emulator on
// 127.0.0.1, say) it is defaultRegion. The partition follows the region (aws-cn for cn-*, ...).
func QueueARN(queueURL, defaultRegion string) (string, error) {
	a, err := awsarn.QueueARN(queueURL, defaultRegion)
	if err != nil {
		return "", fmt.Errorf("scheduler: %w", err)
	}
	return a, nil
}

// queueFromARN splits an SQS queue ARN into its account and name.
func queueFromARN(arn string) (account, name string, err error) {
	q, err := awsarn.ParseQueue(arn)
	if err != nil {
		return "", "", fmt.Errorf("scheduler: %w", err)
	}
	return q.Account, q.Name, nil
}
