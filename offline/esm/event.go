package esm

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Event is the payload Lambda sends a function for an SQS batch. It decodes into aws-lambda-go's
// events.SQSEvent.
type Event struct {
	Records []Record `json:"Records"`
}

// Record is one message of an Event, in Lambda's shape.
type Record struct {
	MessageID              string                      `json:"messageId"`
	ReceiptHandle          string                      `json:"receiptHandle"`
	Body                   string                      `json:"body"`
	Attributes             map[string]string           `json:"attributes"`
	MessageAttributes      map[string]MessageAttribute `json:"messageAttributes"`
	MD5OfMessageAttributes string                      `json:"md5OfMessageAttributes,omitempty"`
	MD5OfBody              string                      `json:"md5OfBody"`
	EventSource            string                      `json:"eventSource"`
	EventSourceARN         string                      `json:"eventSourceARN"`
	AWSRegion              string                      `json:"awsRegion"`
}

// MessageAttribute is a message attribute in Lambda's shape (lists always present, possibly empty).
type MessageAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

// EventSourceSQS is the eventSource of every SQS record.
const EventSourceSQS = "aws:sqs"

// lambdaAttributes are the system attributes Lambda puts in a record's "attributes": the four every
// message has, the FIFO ones, and the X-Ray header when the message carries one.
var lambdaAttributes = []types.MessageSystemAttributeName{
	types.MessageSystemAttributeNameApproximateReceiveCount,
	types.MessageSystemAttributeNameSentTimestamp,
	types.MessageSystemAttributeNameSenderId,
	types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp,
	types.MessageSystemAttributeNameSequenceNumber,
	types.MessageSystemAttributeNameMessageGroupId,
	types.MessageSystemAttributeNameMessageDeduplicationId,
	types.MessageSystemAttributeNameAWSTraceHeader,
}

// NewRecord converts a received message to its record.
func NewRecord(m types.Message, queueARN, region string) Record {
	attrs := map[string]string{}
	for _, name := range lambdaAttributes {
		if v, ok := m.Attributes[string(name)]; ok {
			attrs[string(name)] = v
		}
	}
	msgAttrs := map[string]MessageAttribute{}
	for k, v := range m.MessageAttributes {
		a := MessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         aws.ToString(v.DataType),
		}
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		msgAttrs[k] = a
	}
	return Record{
		MessageID:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Attributes:             attrs,
		MessageAttributes:      msgAttrs,
		MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		MD5OfBody:              aws.ToString(m.MD5OfBody),
		EventSource:            EventSourceSQS,
		EventSourceARN:         queueARN,
		AWSRegion:              region,
	}
}
