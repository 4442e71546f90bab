package main

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// indexUnits follows each item's index key through the writes as DynamoDB bills a global
// secondary index: one unit when an entry appears or goes, two when it moves, none otherwise;
// a refused write moves nothing but heats its item.
func TestIndexUnitsFollowTheItemsIndexKeys(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	key := map[string]types.AttributeValue{"id": s("job#1")}
	u := newIndexUnits()
	steps := []struct {
		params  any
		applied bool
		want    float64
	}{
		// enqueued: the item enters the index
		{&dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
			"id": s("job#1"), contract.AttrListKey: s("q#enqueued"), contract.AttrListAt: n("1")}}, true, 1},
		// a progress write leaves the index alone
		{&dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET #p = :p"),
			ExpressionAttributeNames: map[string]string{"#p": "progress"}, ExpressionAttributeValues: map[string]types.AttributeValue{":p": n("5")}}, true, 1},
		// retrying: the entry moves
		{&dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET #0 = :0, #1 = :1"),
			ExpressionAttributeNames:  map[string]string{"#0": contract.AttrListKey, "#1": contract.AttrListAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":0": s("q#retrying"), ":1": n("2")}}, true, 3},
		// a refused move moves nothing
		{&dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET #0 = :0, #1 = :1"),
			ExpressionAttributeNames:  map[string]string{"#0": contract.AttrListKey, "#1": contract.AttrListAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":0": s("q#dead"), ":1": n("3")}}, false, 3},
		// taken out of the index
		{&dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("REMOVE #0, #1"),
			ExpressionAttributeNames: map[string]string{"#0": contract.AttrListKey, "#1": contract.AttrListAt}}, true, 4},
		// in a transaction: back in, beside a condition check of another item
		{&dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"id": s("batch#b")}}},
			{Put: &types.Put{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
				"id": s("job#1"), contract.AttrListKey: s("q#running"), contract.AttrListAt: n("4")}}},
		}}, true, 5},
		{&dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key}, true, 6},
	}
	for i, st := range steps {
		u.record(st.params, st.applied)
		assert.Equal(t, st.want, u.total(), "step %d", i)
	}
	item, itemUnits, part, partUnits := u.hottest()
	assert.Equal(t, "job#1", item)
	assert.Equal(t, 1.0+1+1+1+1+2+1, itemUnits, "every write heats its item, a transaction's two")
	assert.Equal(t, 2.0, partUnits, "each partition took the entry in and out")
	assert.Contains(t, []string{"q#enqueued", "q#retrying", "q#running"}, part)
	_, after, _, _ := u.hottest()
	assert.Zero(t, after, "hottest resets the heat")
}
