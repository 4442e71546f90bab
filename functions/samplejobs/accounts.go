package samplejobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/jobs/outbox"
)

// LedgerOpenedAttr is the RFC 3339 time OpenAccount opened an account.
const LedgerOpenedAttr = "opened_at"

// WelcomeSubject is the subject of the email OpenAccount sends.
const WelcomeSubject = "Welcome"

// AccountExistsError is OpenAccount's error for an account that is already open: nothing was
// written, and no welcome email is sent.
type AccountExistsError struct{ Account string }

func (e *AccountExistsError) Error() string {
	return fmt.Sprintf("samplejobs: account %s is already open", e.Account)
}

// OpenAccount opens an account in the ledger table and welcomes its owner by email, in one
// DynamoDB transaction (package jobs/outbox): the account's item and the welcome email job are
// written together or not at all. An account is never opened without its welcome, nor is a
// welcome sent for an account that did not open; the outbox forwarder sends the job once the
// transaction has committed. It returns the email job's id.
func OpenAccount(ctx context.Context, ob *outbox.Outbox, db outbox.TransactWriter, ledgerTable, account, email string) (string, error) {
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(LedgerAccountAttr))).Build()
	if err != nil {
		return "", err
	}
	open := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(ledgerTable),
		Item: map[string]types.AttributeValue{
			LedgerAccountAttr: &types.AttributeValueMemberS{Value: account},
			LedgerBalanceAttr: &types.AttributeValueMemberN{Value: "0"},
			LedgerOpenedAttr:  &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)},
		},
		ConditionExpression:      cond.Condition(),
		ExpressionAttributeNames: cond.Names(),
	}}
	ids, err := ob.Write(ctx, db, []types.TransactWriteItem{open},
		outbox.Job{Args: SendEmail{To: email, Subject: WelcomeSubject, Body: "Your account " + account + " is open."}})
	var canceled *types.TransactionCanceledException
	if errors.As(err, &canceled) && len(canceled.CancellationReasons) > 0 &&
		aws.ToString(canceled.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
		return "", &AccountExistsError{Account: account}
	}
	if err != nil {
		return "", err
	}
	return ids[0], nil
}
