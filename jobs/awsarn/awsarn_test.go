package awsarn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

func TestPartition(t *testing.T) {
	t.Parallel()
	for region, want := range map[string]string{
		"eu-west-1": "aws", "cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov",
		"us-iso-east-1": "aws-iso", "us-isob-east-1": "aws-iso-b", "eu-isoe-west-1": "aws-iso-e",
	} {
		assert.Equal(t, want, awsarn.Partition(region), region)
	}
}

func TestParseQueue(t *testing.T) {
	t.Parallel()
	q, err := awsarn.ParseQueue("arn:aws-cn:sqs:cn-north-1:123456789012:orders.fifo")
	require.NoError(t, err)
	assert.Equal(t, awsarn.Queue{Partition: "aws-cn", Region: "cn-north-1", Account: "123456789012", Name: "orders.fifo"}, q)
	assert.Equal(t, "arn:aws-cn:sqs:cn-north-1:123456789012:orders.fifo", q.ARN())
	for _, bad := range []string{"", "orders", "arn:aws:sns:us-east-1:123456789012:topic", "arn:aws:sqs:us-east-1::orders",
		"arn:aws:sqs:us-east-1:123456789012:", "arn:aws:sqs:us-east-1:123456789012:a:b"} {
		_, err := awsarn.ParseQueue(bad)
		assert.Error(t, err, bad)
	}
}

func TestQueueARN(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs":                    "arn:aws:sqs:eu-west-1:123456789012:jobs",
		"https://sqs.cn-north-1.amazonaws.com.cn/123456789012/jobs":                "arn:aws-cn:sqs:cn-north-1:123456789012:jobs",
		"https://us-iso-east-1.queue.c2s.ic.gov/123456789012/jobs":                 "arn:aws-iso:sqs:us-iso-east-1:123456789012:jobs", // default region
		"https://queue.amazonaws.com/123456789012/jobs":                            "arn:aws:sqs:us-east-1:123456789012:jobs",
		"http://127.0.0.1:4566/000000000000/jobs":                                  "arn:aws-iso:sqs:us-iso-east-1:000000000000:jobs",
		"http://localhost:4566/queue/eu-central-1/000000000000/jobs.fifo":          "arn:aws:sqs:eu-central-1:000000000000:jobs.fifo",
		"https://sqs.ap-south-1.localhost.localstack.cloud:4566/000000000000/jobs": "arn:aws:sqs:ap-south-1:000000000000:jobs",
	} {
		got, err := awsarn.QueueARN(url, "us-iso-east-1")
		require.NoError(t, err, url)
		assert.Equal(t, want, got, url)
	}
	for _, bad := range []string{"ftp://x/1/q", "https://sqs.eu-west-1.amazonaws.com/q", "https://sqs.eu-west-1.amazonaws.com/acct/q"} {
		_, err := awsarn.QueueARN(bad, "eu-west-1")
		assert.Error(t, err, bad)
	}
	_, err := awsarn.QueueARN("http://127.0.0.1:4566/000000000000/jobs", "")
	assert.ErrorContains(t, err, "no region")
}

func TestQueueURL(t *testing.T) {
	t.Parallel()
	known := "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"
	assert.Equal(t, known, awsarn.QueueURL(known, "arn:aws:sqs:eu-west-1:123456789012:jobs"), "the same queue")
	assert.Equal(t, "https://sqs.eu-west-1.amazonaws.com/123456789012/other",
		awsarn.QueueURL(known, "arn:aws:sqs:eu-west-1:123456789012:other"))
	assert.Equal(t, "https://sqs.us-east-2.amazonaws.com/210987654321/other",
		awsarn.QueueURL(known, "arn:aws:sqs:us-east-2:210987654321:other"), "the ARN's region and account")
	assert.Equal(t, "http://127.0.0.1:4566/000000000000/other",
		awsarn.QueueURL("http://127.0.0.1:4566/000000000000/jobs", "arn:aws:sqs:us-east-1:000000000000:other"))
	assert.Equal(t, known, awsarn.QueueURL(known, "not an arn"))
}

func TestQueueName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "jobs.fifo", awsarn.QueueName("https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo"))
	assert.Equal(t, "jobs", awsarn.QueueName("arn:aws:sqs:eu-west-1:123456789012:jobs"))
	assert.Equal(t, "jobs", awsarn.QueueName("jobs"))
}
