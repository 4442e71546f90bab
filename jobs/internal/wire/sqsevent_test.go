package wire

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// testdata/sqs-event.json is aws-lambda-go's own SQS event fixture, copied unchanged from
// github.com/aws/aws-lambda-go@v1.55.1/events/testdata/sqs-event.json (Apache License 2.0,
// Copyright Amazon.com, Inc. or its affiliates): the record shape its events.SQSEvent is tested
// with, message attributes of every kind included.
const awsFixture = "testdata/sqs-event.json"

// sqsSeeds are events that take each branch of the decoder: escapes of every kind, non-ASCII,
// surrogate pairs, message attributes, and what it leaves to encoding/json (nulls, duplicate and
// near-miss keys, lone surrogates, invalid UTF-8, invalid JSON, other types).
var sqsSeeds = []string{
	`{"Records":[]}`,
	`{}`,
	` {"Records":[{}]} `,
	`{"Records":[{"messageId":"m1","body":"{\"v\":1,\"id\":\"a\\\\b\\u00e9\\ud83d\\ude00\",\"x\":\"\\n\\t\\r\\b\\f\\/\"}","attributes":{"ApproximateReceiveCount":"2","MessageGroupId":"g"},"messageAttributes":{}}]}`,
	`{"Records":[{"body":"h\u00e9llo \ud83d\ude00 é ✓","attributes":{},"eventSourceARN":"arn:aws:sqs:us-east-1:1:q","unknown":[1,{"a":null}]}],"other":true}`,
	`{"Records":[{"messageAttributes":{"a":{"stringValue":"s","dataType":"String","stringListValues":[],"binaryListValues":[]},"b":{"binaryValue":"MTEwMA==","binaryListValues":["MA==","MQ=="],"stringListValues":["x","y"],"dataType":"Binary"}}}]}`,
	`{"Records":[{"messageId":null}]}`,
	`{"Records":null}`,
	`null`,
	`{"Records":[{"messageId":"a","messageId":"b"}]}`,
	`{"Records":[{"MessageID":"a"}]}`,
	`{"records":[{"messageId":"a"}]}`,
	`{"Records":[{"body":"\ud800"}]}`,
	`{"Records":[{"body":"\ud800\u0041"}]}`,
	"{\"Records\":[{\"body\":\"\xff\"}]}",
	`{"Records":[{"body":1}]}`,
	`{"Records":[{"attributes":{"a":"1","a":"2"}}]}`,
	`{"Records":[{"attributes":{"a":null}}]}`,
	`{"Records":[{"messageAttributes":{"a":{"binaryValue":"!!"}}}]}`,
	`{"Records":[{"body":"x"}],}`,
	`{"Records":[{"body":"x"}]} x`,
	`[]`,
	`{"Records":[{"body":"\u0000\u001f"}]}`,
	`{"Records":[{"body":"a\"b"}]`,
	// Later records against the first one's member order: the same, another, one missing, an
	// unknown member, a duplicate, a near-miss key, white space before the colon.
	`{"Records":[{"messageId":"a","body":"x","awsRegion":"r"},{"messageId":"b","body":"y","awsRegion":"s"}]}`,
	`{"Records":[{"messageId":"a","body":"x"},{"body":"y","messageId":"b"},{"body":"z"}]}`,
	`{"Records":[{"messageId":"a","u":1,"body":"x"},{"messageId":"b","u":2,"body":"y"}]}`,
	`{"Records":[{"messageId":"a","body":"x"},{"messageId":"b","messageId":"c"}]}`,
	`{"Records":[{"messageId":"a","body":"x"},{"messageIdX":"b","body":"y"},{"MessageId":"c"}]}`,
	`{"Records":[{"messageId":"a","body":"x"},{"messageId" : "b","body"  :"y"}]}`,
	`{"Records":[{"body":"{\"a\":\"0123456789abcdef\",\"b\":\"\u00e9\\u0041\"}"},{"body":"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"x"}]}`,
}

// decodeReference is what aws-lambda-go's typed handlers do with the payload.
func decodeReference(data []byte) (events.SQSEvent, error) {
	var ev events.SQSEvent
	err := json.Unmarshal(data, &ev)
	return ev, err
}

// asEvent is the event of DecodeSQSEvent's records.
func asEvent(recs []SQSMessage) events.SQSEvent {
	var ev events.SQSEvent
	if recs != nil {
		ev.Records = make([]events.SQSMessage, len(recs))
		for i := range recs {
			ev.Records[i] = recs[i].Event()
		}
	}
	return ev
}

// checkAgainstEncodingJSON fails unless DecodeSQSEvent gives the records json.Unmarshal gives,
// and errs where it errs.
func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	want, wantErr := decodeReference(data)
	got, err := DecodeSQSEvent(data)
	if wantErr != nil {
		require.Error(t, err, "encoding/json: %v", wantErr)
		return
	}
	require.NoError(t, err)
	if ev := asEvent(got); !reflect.DeepEqual(ev, want) {
		t.Fatalf("input %q\ngot  %#v\nwant %#v", data, ev, want)
	}
}

func TestDecodeSQSEventSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range sqsSeeds {
		checkAgainstEncodingJSON(t, []byte(s))
	}
}

func TestDecodeSQSEventAWSFixture(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(awsFixture)
	require.NoError(t, err)
	checkAgainstEncodingJSON(t, data)
	recs, ok := fastSQS(data)
	require.True(t, ok, "the fixture takes the fast path")
	require.Len(t, recs, 1)
	require.Equal(t, "2", recs[0].Attribute("ApproximateReceiveCount"))
	require.Len(t, recs[0].MessageAttributes, 3)
}

// fastSQS runs the fast path alone.
func fastSQS(data []byte) ([]SQSMessage, bool) {
	d := sqsDecoder{buf: append([]byte(nil), data...)}
	d.s = StringOf(d.buf)
	return d.event()
}

// jobEvent is an event of n records as an SQS event source mapping sends jobkit's envelopes.
func jobEvent(n int) events.SQSEvent {
	var ev events.SQSEvent
	for i := 0; i < n; i++ {
		ev.Records = append(ev.Records, jobRecord)
	}
	return ev
}

var jobRecord = events.SQSMessage{
	MessageId: "00000000-0000-4000-8000-000000000001", ReceiptHandle: "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a==", Body: jobBody,
	Md5OfBody: "0c4b1ba1c4a1bb2b9b3a8c1b0b3c4b1b",
	Attributes: map[string]string{
		"ApproximateReceiveCount": "1", "SentTimestamp": "1763726400000", "SenderId": "AIDAIENQZJOLO23YVJ4VO",
		"ApproximateFirstReceiveTimestamp": "1763726400001", "AWSTraceHeader": "Root=1-abc;Sampled=1",
	},
	MessageAttributes: map[string]events.SQSMessageAttribute{},
	EventSource:       "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:jobs", AWSRegion: "us-east-1",
}

const jobBody = `{"v":1,"id":"sample-1","kind":"bench.sample","args":{"user_id":100001,"email":"user1@example.com","template":"receipt","amount":1.25},"enqueued_at":"2026-11-21T12:00:00Z"}`

func TestDecodeSQSEventFastPathTakesJobEvents(t *testing.T) {
	t.Parallel()
	body := `{"v":1,"id":"sample-1","kind":"bench.sample","args":{"user_id":100001,"email":"user1@example.com","template":"receipt","amount":1.25},"enqueued_at":"2026-11-21T12:00:00Z"}`
	ev := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "00000000-0000-4000-8000-000000000001", ReceiptHandle: "rh", Body: body, Md5OfBody: "x",
		Attributes: map[string]string{
			"ApproximateReceiveCount": "1", "SentTimestamp": "1763726400000", "SenderId": "AIDA",
			"ApproximateFirstReceiveTimestamp": "1763726400001", "AWSTraceHeader": "Root=1-abc;Sampled=1",
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource:       "aws:sqs", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:jobs", AWSRegion: "us-east-1",
	}}}
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	recs, ok := fastSQS(data)
	require.True(t, ok)
	require.Equal(t, body, recs[0].Body)
	require.Equal(t, "Root=1-abc;Sampled=1", recs[0].Attribute("AWSTraceHeader"))
	checkAgainstEncodingJSON(t, data)
	// The payload may be reused once decoded: the records hold a copy.
	got, err := DecodeSQSEvent(data)
	require.NoError(t, err)
	for i := range data {
		data[i] = 'x'
	}
	require.Equal(t, body, got[0].Body)
	require.False(t, strings.Contains(got[0].Body, "xxxx"))
}

// FuzzDecodeSQSEvent checks DecodeSQSEvent against json.Unmarshal into aws-lambda-go's
// events.SQSEvent: the same records for any input encoding/json accepts, an error where it errs.
func FuzzDecodeSQSEvent(f *testing.F) {
	for _, s := range sqsSeeds {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(awsFixture); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstEncodingJSON(t, data)
	})
}

func BenchmarkDecodeSQSEvent(b *testing.B) { benchDecode(b, fixture(b), DecodeSQSEvent) }

func BenchmarkDecodeSQSEventEncodingJSON(b *testing.B) {
	benchDecode(b, fixture(b), decodeReference)
}

// BenchmarkDecodeSQSEventJobs decodes a Lambda event of ten jobs, each body an envelope.
func BenchmarkDecodeSQSEventJobs(b *testing.B) { benchDecode(b, jobPayload(b), DecodeSQSEvent) }

func BenchmarkDecodeSQSEventJobsEncodingJSON(b *testing.B) {
	benchDecode(b, jobPayload(b), decodeReference)
}

func fixture(b *testing.B) []byte {
	data, err := os.ReadFile(awsFixture)
	require.NoError(b, err)
	return data
}

func jobPayload(b *testing.B) []byte {
	data, err := json.Marshal(jobEvent(10))
	require.NoError(b, err)
	return data
}

// benchDecode measures decode on data, bytes per second and allocations reported.
func benchDecode[T any](b *testing.B, data []byte, decode func([]byte) (T, error)) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
