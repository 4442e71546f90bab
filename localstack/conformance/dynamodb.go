package conformance

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// AWS documentation the DynamoDB checks cite.
const (
	docPutItem      = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html"
	docUpdateItem   = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html"
	docTransact     = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html"
	docDescribeTTL  = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeTimeToLive.html"
	docConditionals = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html"
)

var dynamoDBChecks = []Check{
	{Name: "dynamodb/put-condition-failure-all-old", Service: DynamoDB, Doc: docPutItem, Run: checkPutAllOld},
	{Name: "dynamodb/transaction-cancellation-reasons", Service: DynamoDB, Doc: docTransact, Run: checkTransactReasons},
	{Name: "dynamodb/lease-condition-update", Service: DynamoDB, Doc: docUpdateItem, Run: checkLeaseUpdate},
	{Name: "dynamodb/lease-condition-delete", Service: DynamoDB, Doc: docConditionals, Run: checkLeaseDelete},
	{Name: "dynamodb/ttl-settings", Service: DynamoDB, Doc: docDescribeTTL, Run: checkTTLSettings},
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// createTable creates an on-demand table keyed by the string "id", waits until it is active and
// deletes it when the check ends.
func createTable(ctx context.Context, env *Env) (string, error) {
	name := env.Name("t")
	_, err := env.DynamoDB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) { // in use: the SDK retried a create whose answer was lost
		return "", fmt.Errorf("create table %s: %w", name, err)
	}
	env.Defer(func(ctx context.Context) {
		_, _ = env.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	w := dynamodb.NewTableExistsWaiter(env.DynamoDB, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return "", fmt.Errorf("table %s not active: %w", name, err)
	}
	return name, nil
}

func put(ctx context.Context, env *Env, table string, item map[string]ddbtypes.AttributeValue) error {
	_, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	return nil
}

// wantOldItem returns nil when err is a ConditionalCheckFailedException carrying want.
func wantOldItem(call string, err error, want map[string]ddbtypes.AttributeValue) error {
	if err == nil {
		return fmt.Errorf("%s succeeded; want ConditionalCheckFailedException", call)
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return fmt.Errorf("%s failed with %v; want ConditionalCheckFailedException", call, err)
	}
	if !reflect.DeepEqual(ccf.Item, want) {
		return fmt.Errorf("%s: ConditionalCheckFailedException.Item = %s, want the old item %s", call, show(ccf.Item), show(want))
	}
	return nil
}

// A failed conditional PutItem with ReturnValuesOnConditionCheckFailure=ALL_OLD returns the
// typed ConditionalCheckFailedException carrying the item as it was, and changes nothing.
func checkPutAllOld(ctx context.Context, env *Env) error {
	table, err := createTable(ctx, env)
	if err != nil {
		return err
	}
	old := map[string]ddbtypes.AttributeValue{"id": s("k1"), "status": s("COMPLETED"), "expiration": n(4102444800)}
	if err := put(ctx, env, table, old); err != nil {
		return err
	}
	_, err = env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(table),
		Item:                                map[string]ddbtypes.AttributeValue{"id": s("k1"), "status": s("INPROGRESS")},
		ConditionExpression:                 aws.String("attribute_not_exists(id)"),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err := wantOldItem("conditional PutItem", err, old); err != nil {
		return err
	}
	return wantItem(ctx, env, table, "k1", old)
}

// A cancelled TransactWriteItems reports one CancellationReason per item, in request order: "None"
// for the items that passed, "ConditionalCheckFailed" with the old item (ALL_OLD) for the one that
// failed; none of its writes is applied.
func checkTransactReasons(ctx context.Context, env *Env) error {
	table, err := createTable(ctx, env)
	if err != nil {
		return err
	}
	held := map[string]ddbtypes.AttributeValue{"id": s("held"), "owner": s("other")}
	if err := put(ctx, env, table, held); err != nil {
		return err
	}
	_, err = env.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{"id": s("new")},
			ConditionExpression: aws.String("attribute_not_exists(id)")}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": s("held")},
			ConditionExpression: aws.String("#o = :me"), ExpressionAttributeNames: map[string]string{"#o": "owner"},
			ExpressionAttributeValues:           map[string]ddbtypes.AttributeValue{":me": s("me")},
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld}},
		{Update: &ddbtypes.Update{TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": s("other")},
			UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": n(1)}}},
	}})
	if err == nil {
		return fmt.Errorf("TransactWriteItems succeeded; want TransactionCanceledException")
	}
	var tce *ddbtypes.TransactionCanceledException
	if !errors.As(err, &tce) {
		return fmt.Errorf("TransactWriteItems failed with %v; want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if want := []string{"None", "ConditionalCheckFailed", "None"}; !reflect.DeepEqual(codes, want) {
		return fmt.Errorf("CancellationReasons codes = %q, want %q", codes, want)
	}
	if got := tce.CancellationReasons[1].Item; !reflect.DeepEqual(got, held) {
		return fmt.Errorf("CancellationReasons[1].Item = %s, want the old item %s", show(got), show(held))
	}
	if err := wantItem(ctx, env, table, "new", nil); err != nil {
		return fmt.Errorf("after the cancelled transaction: %w", err)
	}
	return wantItem(ctx, env, table, "other", nil)
}

// An UpdateItem conditioned on a lease having ended fails while it runs (returning the old item
// with ALL_OLD) and succeeds once the time given has passed it.
func checkLeaseUpdate(ctx context.Context, env *Env) error {
	table, err := createTable(ctx, env)
	if err != nil {
		return err
	}
	const leaseEnd = 1_800_000_000_000 // ms
	old := map[string]ddbtypes.AttributeValue{"id": s("k1"), "status": s("INPROGRESS"), "in_progress_expiration": n(leaseEnd)}
	if err := put(ctx, env, table, old); err != nil {
		return err
	}
	takeOver := func(now int64) error {
		_, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": s("k1")},
			UpdateExpression:                    aws.String("SET in_progress_expiration = :new"),
			ConditionExpression:                 aws.String("#s = :inprogress AND in_progress_expiration < :now"),
			ExpressionAttributeNames:            map[string]string{"#s": "status"},
			ExpressionAttributeValues:           map[string]ddbtypes.AttributeValue{":inprogress": s("INPROGRESS"), ":now": n(now), ":new": n(now + 60_000)},
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}
	if err := wantOldItem("UpdateItem during the lease", takeOver(leaseEnd-1), old); err != nil {
		return err
	}
	if err := takeOver(leaseEnd + 1); err != nil {
		return fmt.Errorf("UpdateItem after the lease: %w", err)
	}
	want := map[string]ddbtypes.AttributeValue{"id": s("k1"), "status": s("INPROGRESS"), "in_progress_expiration": n(leaseEnd + 60_001)}
	return wantItem(ctx, env, table, "k1", want)
}

// A DeleteItem conditioned on the caller holding the lease fails for another holder (returning
// the old item with ALL_OLD, deleting nothing) and deletes for the holder.
func checkLeaseDelete(ctx context.Context, env *Env) error {
	table, err := createTable(ctx, env)
	if err != nil {
		return err
	}
	old := map[string]ddbtypes.AttributeValue{"id": s("k1"), "status": s("INPROGRESS"), "validation": s("hash-1")}
	if err := put(ctx, env, table, old); err != nil {
		return err
	}
	release := func(holder string) error {
		_, err := env.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": s("k1")},
			ConditionExpression:                 aws.String("#s = :inprogress AND validation = :v"),
			ExpressionAttributeNames:            map[string]string{"#s": "status"},
			ExpressionAttributeValues:           map[string]ddbtypes.AttributeValue{":inprogress": s("INPROGRESS"), ":v": s(holder)},
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}
	if err := wantOldItem("DeleteItem by another holder", release("hash-2"), old); err != nil {
		return err
	}
	if err := wantItem(ctx, env, table, "k1", old); err != nil {
		return err
	}
	if err := release("hash-1"); err != nil {
		return fmt.Errorf("DeleteItem by the holder: %w", err)
	}
	return wantItem(ctx, env, table, "k1", nil)
}

// UpdateTimeToLive enables TTL on an attribute; DescribeTimeToLive then reports it ENABLING or
// ENABLED on that attribute.
func checkTTLSettings(ctx context.Context, env *Env) error {
	table, err := createTable(ctx, env)
	if err != nil {
		return err
	}
	_, err = env.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{
			AttributeName: aws.String("expiration"), Enabled: aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("UpdateTimeToLive: %w", err)
	}
	out, err := env.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("DescribeTimeToLive: %w", err)
	}
	d := out.TimeToLiveDescription
	if d == nil {
		return fmt.Errorf("DescribeTimeToLive: no TimeToLiveDescription")
	}
	if st := d.TimeToLiveStatus; st != ddbtypes.TimeToLiveStatusEnabled && st != ddbtypes.TimeToLiveStatusEnabling {
		return fmt.Errorf("TimeToLiveStatus = %q, want ENABLED or ENABLING", st)
	}
	if a := aws.ToString(d.AttributeName); a != "expiration" {
		return fmt.Errorf("TTL AttributeName = %q, want expiration", a)
	}
	return nil
}

// wantItem returns nil when the item under id is want (nil: absent), read consistently.
func wantItem(ctx context.Context, env *Env, table, id string, want map[string]ddbtypes.AttributeValue) error {
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{"id": s(id)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("get %s: %w", id, err)
	}
	if len(out.Item) == 0 && len(want) == 0 {
		return nil
	}
	if !reflect.DeepEqual(out.Item, want) {
		return fmt.Errorf("item %s = %s, want %s", id, show(out.Item), show(want))
	}
	return nil
}

// show renders an item readably: {id:S=k1 n:N=1}.
func show(item map[string]ddbtypes.AttributeValue) string {
	if item == nil {
		return "(none)"
	}
	out := "{"
	for _, k := range sortedKeys(item) {
		if out != "{" {
			out += " "
		}
		switch v := item[k].(type) {
		case *ddbtypes.AttributeValueMemberS:
			out += k + ":S=" + v.Value
		case *ddbtypes.AttributeValueMemberN:
			out += k + ":N=" + v.Value
		default:
			out += fmt.Sprintf("%s:%T", k, v)
		}
	}
	return out + "}"
}

func sortedKeys(item map[string]ddbtypes.AttributeValue) []string {
	ks := make([]string, 0, len(item))
	for k := range item {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
