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
// The accepted keys are items MailKeyPrefix+key (partition key "id") in Table.
type KeyedMailer struct {
	DB    MailPutAPI
	Table string
	Next  samplejobs.Mailer
}

// Send delivers msg through Next unless its idempotency key was accepted before. A message
// without a key is always delivered.
func (m KeyedMailer) Send(ctx context.Context, msg samplejobs.Email) error {
	if msg.IdempotencyKey == "" {
		return m.Next.Send(ctx, msg)
	}
	_, err := m.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(m.Table),
		Item:                     map[string]types.AttributeValue{EffectsIDAttr: &types.AttributeValueMemberS{Value: MailKeyPrefix + msg.IdempotencyKey}},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": EffectsIDAttr},
	})
	var dup *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &dup):
		return nil // accepted before: the provider delivers nothing more
	case err != nil:
		return fmt.Errorf("mail provider: %w", err)
	}
	return m.Next.Send(ctx, msg)
}
