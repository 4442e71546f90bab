package scheduler

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)

// QueueARN derives an SQS queue's ARN from its URL. The path is /<account>/<name> (AWS, moto,
// LocalStack's default), or LocalStack's path strategy /queue/<region>/<account>/<name>, whose
// region then wins over the host's. Otherwise the region comes from the host for AWS URLs (sqs.<region>.amazonaws.com[.cn],
// sqs.<region>.api.aws, the legacy <region>.queue.amazonaws.com and queue.amazonaws.com) and
// LocalStack's sqs.<region>.localhost.localstack.cloud; for any other host (an emulator on
// 127.0.0.1, say) it is defaultRegion. The partition follows the region (aws-cn for cn-*, ...).
func QueueARN(queueURL, defaultRegion string) (string, error) {
	fail := func(reason string) (string, error) {
		return "", fmt.Errorf("scheduler: queue URL %q: %s", queueURL, reason)
	}
	u, err := url.Parse(queueURL)
	if err != nil {
		return fail(err.Error())
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fail("not an http(s) URL")
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	pathRegion := ""
	if len(parts) == 4 && parts[0] == "queue" && regionPattern.MatchString(parts[1]) {
		pathRegion, parts = parts[1], parts[2:]
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return fail("want /<account>/<queue name> (or /queue/<region>/<account>/<queue name>) as the path")
	}
	account, name := parts[0], parts[1]
	for _, r := range account {
		if r < '0' || r > '9' {
			return fail("the account id is not a number")
		}
	}
	region := cmp.Or(pathRegion, regionFromHost(u.Hostname()))
	if region == "" {
		region = defaultRegion
	}
	if !regionPattern.MatchString(region) {
		return fail(fmt.Sprintf("no region in the host and the default region %q is not one", region))
	}
	return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", partition(region), region, account, name), nil
}

func regionFromHost(host string) string {
	labels := strings.Split(strings.ToLower(host), ".")
	switch {
	case host == "queue.amazonaws.com":
		return "us-east-1"
	case len(labels) >= 3 && labels[0] == "sqs" && regionPattern.MatchString(labels[1]):
		return labels[1] // sqs.<region>.amazonaws.com[.cn], sqs.<region>.api.aws, LocalStack
	case len(labels) == 4 && labels[1] == "queue" && regionPattern.MatchString(labels[0]):
		return labels[0] // <region>.queue.amazonaws.com
	}
	return ""
}

func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(region, "us-isob-"):
		return "aws-iso-b"
	case strings.HasPrefix(region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(region, "eu-isoe-"):
		return "aws-iso-e"
	}
	return "aws"
}

// queueFromARN splits an SQS queue ARN into its account and name.
func queueFromARN(arn string) (account, name string, err error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[4] == "" || parts[5] == "" {
		return "", "", fmt.Errorf("scheduler: %q is not an SQS queue ARN", arn)
	}
	return parts[4], parts[5], nil
}
