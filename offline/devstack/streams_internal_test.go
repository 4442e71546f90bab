package devstack

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/esm"
)

// The on-failure record names where the given-up records are in the stream, as Lambda's does
// (DDBStreamBatchInfo), not the records themselves.
func TestOnFailureRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC)
	rec := func(seq string, d time.Duration) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq, ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Add(d)},
			NewImage: map[string]events.DynamoDBAttributeValue{"secret": events.NewStringAttribute("not in the record")},
		}}
	}
	m := deploy.StreamEventSourceMapping{StreamARN: "arn:aws:dynamodb:us-east-1:1:table/t/stream/x", MaximumRetryAttempts: 2}
	body, err := onFailureRecord(m, "arn:aws:lambda:us-east-1:1:function:f", esm.SkipRetriesExhausted, []events.DynamoDBEventRecord{rec("100", 0), rec("105", time.Second)})
	require.NoError(t, err)
	require.NotContains(t, body, "not in the record")
	var got struct {
		RequestContext struct {
			FunctionArn            string `json:"functionArn"`
			Condition              string `json:"condition"`
			ApproximateInvokeCount int    `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		Info struct {
			Start     string `json:"startSequenceNumber"`
			End       string `json:"endSequenceNumber"`
			First     string `json:"approximateArrivalOfFirstRecord"`
			Last      string `json:"approximateArrivalOfLastRecord"`
			BatchSize int    `json:"batchSize"`
			StreamArn string `json:"streamArn"`
		} `json:"DDBStreamBatchInfo"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "arn:aws:lambda:us-east-1:1:function:f", got.RequestContext.FunctionArn)
	require.Equal(t, "RetryAttemptsExhausted", got.RequestContext.Condition)
	require.Equal(t, 3, got.RequestContext.ApproximateInvokeCount)
	require.Equal(t, "100", got.Info.Start)
	require.Equal(t, "105", got.Info.End)
	require.Equal(t, "2026-11-23T19:00:00Z", got.Info.First)
	require.Equal(t, "2026-11-23T19:00:01Z", got.Info.Last)
	require.Equal(t, 2, got.Info.BatchSize)
	require.Equal(t, m.StreamARN, got.Info.StreamArn)
}
