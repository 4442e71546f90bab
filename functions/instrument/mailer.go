package instrument

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
)

// MailKeyPrefix begins the key of the item KeyedMailer keeps per idempotency key it accepted.
const MailKeyPrefix = "mailprovider#"

// MailPutAPI is the part of the DynamoDB client KeyedMailer calls.
type MailPutAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// KeyedMailer stands in for a mail provider that honours idempotency keys, as real ones do: the
// first send of a key is accepted and delivered (Next), a later send of the same key is answered
// as accepted and delivers nothing. A job that sent its email and then lost the time to record
// its completion runs again and sends again; the provider, not the job, keeps the email single.
// An acceptance whose answer was lost (the job then retries) is delivered on the retry, once.
// The keys are items MailKeyPrefix+key (partition key "id") in Table, "delivered" once Next took
// the message.
type KeyedMailer struct {
	DB    MailAPI
	Table string
	Next  samplejobs.Mailer
}

// MailAPI is the part of the DynamoDB client KeyedMailer calls.
type MailAPI interface {
	MailPutAPI
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

const mailDeliveredAttr = "delivered"

// Send delivers msg through Next unless its idempotency key was delivered before. A message
// without a key is always delivered.
func (m KeyedMailer) Send(ctx context.Context, msg samplejobs.Email) error {
	if msg.IdempotencyKey == "" {
		return m.Next.Send(ctx, msg)
	}
	key := map[string]types.AttributeValue{EffectsIDAttr: &types.AttributeValueMemberS{Value: MailKeyPrefix + msg.IdempotencyKey}}
	_, err := m.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(m.Table),
		Item:                     key,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": EffectsIDAttr},
	})
	var dup *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &dup):
		got, err := m.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(m.Table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("mail provider: %w", err)
		}
		if _, delivered := got.Item[mailDeliveredAttr]; delivered {
			return nil // accepted and delivered before: the provider delivers nothing more
		}
	case err != nil:
		return fmt.Errorf("mail provider: %w", err)
	}
	if err := m.Next.Send(ctx, msg); err != nil {
		return err
	}
	// Delivered: the job succeeds whether or not this is recorded. A rerun before it is would
	// deliver again — the provider's own window, as narrow as a real one's.
	_, _ = m.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(m.Table), Key: key,
		UpdateExpression:          aws.String("SET #d = :t"),
		ExpressionAttributeNames:  map[string]string{"#d": mailDeliveredAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}},
	})
	return nil
}
