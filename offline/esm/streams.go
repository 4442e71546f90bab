package esm

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// DynamoDBEventRecord is a DynamoDB Streams record (GetRecords) as Lambda's event source mapping
// hands it to a function: the record with the stream's ARN as eventSourceARN.
func DynamoDBEventRecord(r streamtypes.Record, streamARN string) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if d := r.Dynamodb; d != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys:           streamImage(d.Keys),
			NewImage:       streamImage(d.NewImage),
			OldImage:       streamImage(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber),
			SizeBytes:      aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
	}
	return out
}

func streamImage(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = streamValue(v)
	}
	return out
}

func streamValue(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = streamValue(e)
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(streamImage(v.Value))
	}
	return events.NewNullAttribute()
}
