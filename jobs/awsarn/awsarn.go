// Package awsarn holds what the kit knows about AWS names: partitions, SQS queue ARNs and URLs.
// It is a leaf (the standard library and the SDK's ARN parser only), so the library, the
// CLI, the constructs and the offline stack read a name the same way.
package awsarn

import (
	"cmp"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/arn"
)

var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)

// IsRegion reports whether s has the shape of an AWS region name ("eu-west-1").
func IsRegion(s string) bool { return regionPattern.MatchString(s) }

// Partition returns the ARN partition of region: aws-cn for China, aws-us-gov for GovCloud,
// aws-iso, aws-iso-b and aws-iso-e for the isolated regions, aws elsewhere.
func Partition(region string) string {
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

// Queue is an SQS queue named by its ARN.
type Queue struct {
	Partition, Region, Account, Name string
}

// ARN returns the queue's ARN.
func (q Queue) ARN() string {
	return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", q.Partition, q.Region, q.Account, q.Name)
}

// ParseQueue reads an SQS queue ARN ("arn:aws:sqs:<region>:<account>:<name>").
func ParseQueue(queueARN string) (Queue, error) {
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.AccountID == "" || a.Resource == "" || strings.Contains(a.Resource, ":") {
		return Queue{}, fmt.Errorf("%q is not an SQS queue ARN", queueARN)
	}
	return Queue{Partition: a.Partition, Region: a.Region, Account: a.AccountID, Name: a.Resource}, nil
}

// QueueARN derives an SQS queue's ARN from its URL. The path is /<account>/<name> (AWS, moto,
// LocalStack's default), or LocalStack's path strategy /queue/<region>/<account>/<name>, whose
// region then wins over the host's. Otherwise the region comes from the host for AWS URLs
// (sqs.<region>.amazonaws.com[.cn], sqs.<region>.api.aws, the legacy
// <region>.queue.amazonaws.com and queue.amazonaws.com) and LocalStack's
// sqs.<region>.localhost.localstack.cloud; for any other host (an emulator on 127.0.0.1, say) it
// is defaultRegion. The partition follows the region (Partition).
func QueueARN(queueURL, defaultRegion string) (string, error) {
	fail := func(reason string) (string, error) {
		return "", fmt.Errorf("queue URL %q: %s", queueURL, reason)
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
	if len(parts) == 4 && parts[0] == "queue" && IsRegion(parts[1]) {
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
	region := cmp.Or(pathRegion, RegionOfHost(u.Hostname()), defaultRegion)
	if !IsRegion(region) {
		return fail(fmt.Sprintf("no region in the host and the default region %q is not one", region))
	}
	return Queue{Partition: Partition(region), Region: region, Account: account, Name: name}.ARN(), nil
}

// RegionOfHost returns the region an SQS endpoint's host names, or "" (an emulator's host).
func RegionOfHost(host string) string {
	labels := strings.Split(strings.ToLower(host), ".")
	switch {
	case host == "queue.amazonaws.com":
		return "us-east-1"
	case len(labels) >= 3 && labels[0] == "sqs" && IsRegion(labels[1]):
		return labels[1] // sqs.<region>.amazonaws.com[.cn], sqs.<region>.api.aws, LocalStack
	case len(labels) == 4 && labels[1] == "queue" && IsRegion(labels[0]):
		return labels[0] // <region>.queue.amazonaws.com
	}
	return ""
}

// QueueURL returns the URL of the queue queueARN names, built on a known queue URL: that URL when
// it is the same queue, else its endpoint with the ARN's account and name
// ("https://sqs.<region>.amazonaws.com/<account>/<name>" on AWS, the ARN's region replacing the
// host's; emulators use the same shape). An ARN that is not a queue's gives known back.
func QueueURL(known, queueARN string) string {
	q, err := ParseQueue(queueARN)
	if err != nil {
		return known
	}
	base := strings.TrimRight(known, "/")
	i := strings.LastIndex(base, "/")
	if i < 0 {
		return known
	}
	if base[i+1:] == q.Name && strings.HasSuffix(base[:i], "/"+q.Account) {
		return known
	}
	if j := strings.LastIndex(base[:i], "/"); j >= 0 {
		base = base[:j]
	}
	if host := hostOf(known); host != "" {
		if r := RegionOfHost(host); r != "" && q.Region != "" && r != q.Region {
			base = strings.Replace(base, "."+r+".", "."+q.Region+".", 1)
		}
	}
	return base + "/" + q.Account + "/" + q.Name
}

// IsFIFO reports whether a queue URL (or ARN) names a FIFO queue: its name ends in ".fifo".
func IsFIFO(queueURLOrARN string) bool { return strings.HasSuffix(queueURLOrARN, ".fifo") }

// QueueName returns the queue name in a queue URL or ARN: the part after the last '/' or ':'.
func QueueName(queueURLOrARN string) string {
	s := strings.TrimRight(queueURLOrARN, "/")
	if i := strings.LastIndexAny(s, "/:"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
