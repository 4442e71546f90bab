package faultproxy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

func TestCapacityUnits(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1500)
	cases := []struct {
		name        string
		api, body   string
		write, read float64
	}{
		{"small put", "DynamoDB.PutItem", `{"TableName":"t","Item":{"id":{"S":"a"},"n":{"N":"12"}}}`, 1, 0},
		{"put over 1 KB", "DynamoDB.PutItem", `{"TableName":"t","Item":{"id":{"S":"a"},"data":{"S":"` + big + `"}}}`, 2, 0},
		{"update", "DynamoDB.UpdateItem", `{"TableName":"t","Key":{"id":{"S":"a"}},"UpdateExpression":"SET a = :a"}`, 1, 0},
		{"delete", "DynamoDB.DeleteItem", `{"TableName":"t","Key":{"id":{"S":"a"}}}`, 1, 0},
		{"transaction of two", "DynamoDB.TransactWriteItems",
			`{"TransactItems":[{"Update":{"TableName":"t","Key":{"id":{"S":"a"}}}},{"Put":{"TableName":"t","Item":{"id":{"S":"b"}}}}]}`, 4, 0},
		{"transaction with a big put", "DynamoDB.TransactWriteItems",
			`{"TransactItems":[{"Put":{"TableName":"t","Item":{"id":{"S":"b"},"d":{"S":"` + big + `"}}}}]}`, 4, 0},
		{"batch write", "DynamoDB.BatchWriteItem",
			`{"RequestItems":{"t":[{"PutRequest":{"Item":{"id":{"S":"a"}}}},{"DeleteRequest":{"Key":{"id":{"S":"b"}}}}]}}`, 2, 0},
		{"eventual get", "DynamoDB.GetItem", `{"TableName":"t","Key":{"id":{"S":"a"}}}`, 0, 0.5},
		{"consistent get", "DynamoDB.GetItem", `{"TableName":"t","Key":{"id":{"S":"a"}},"ConsistentRead":true}`, 0, 1},
		{"batch get", "DynamoDB.BatchGetItem", `{"RequestItems":{"t":{"Keys":[{"id":{"S":"a"}},{"id":{"S":"b"}}]}}}`, 0, 1},
		{"transact get", "DynamoDB.TransactGetItems", `{"TransactItems":[{"Get":{}},{"Get":{}}]}`, 0, 4},
		{"sqs", "SQS.SendMessageBatch", `{"Entries":[{},{}]}`, 0, 0},
		{"describe", "DynamoDB.DescribeTable", `{"TableName":"t"}`, 0, 0},
	}
	for _, c := range cases {
		w, r := faultproxy.CapacityUnits(c.api, []byte(c.body))
		require.Equal(t, c.write, w, c.name)
		require.Equal(t, c.read, r, c.name)
	}
}
