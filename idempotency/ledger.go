package idempotency

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/jobs"
)

// Deliveries that did not run a job are counted in the idempotency table, so the runtime's
// JobRow.Attempt counts real runs (jobs.Config.Deliveries). One item per SQS message id, apart
// from the job records by its key prefix:
//
//	id = "jobkit#not_run#<message id>", not_run (N), expiration (TTL, epoch s)
//
// It is keyed by message id, not job key: a job redriven from the DLQ is a new message and gets
// its attempts afresh. The item lives as long as SQS can keep a message (14 days).
const (
	// NotRunKeyPrefix begins the key of every ledger item (a worker's IAM grant allows it
	// beside its own kinds' keys).
	NotRunKeyPrefix = "jobkit#not_run#"
	// AttrNotRun is the count of deliveries that did not run, on a ledger item.
	AttrNotRun = "not_run"
	// notRunExpiry is SQS's longest message retention.
	notRunExpiry = 14 * 24 * time.Hour
)

var (
	_ jobs.DeliveryLedger = (*DynamoDBStore)(nil)
	_ jobs.DeliveryLedger = (*MemoryStore)(nil)
)

// AddNotRun implements jobs.DeliveryLedger: one UpdateItem adding 1.
func (s *DynamoDBStore) AddNotRun(ctx context.Context, messageID string) error {
	exp := strconv.FormatInt(time.Now().Add(notRunExpiry).Unix(), 10)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      keyOf(NotRunKeyPrefix + messageID),
		UpdateExpression:         aws.String("ADD #n :one SET #e = :exp"),
		ExpressionAttributeNames: map[string]string{"#n": AttrNotRun, "#e": AttrExpiration},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":exp": &types.AttributeValueMemberN{Value: exp},
		},
	})
	if err != nil {
		return &StoreError{Op: "add not-run delivery", Key: NotRunKeyPrefix + messageID, Err: err}
	}
	return nil
}

// NotRun implements jobs.DeliveryLedger: one strongly consistent GetItem.
func (s *DynamoDBStore) NotRun(ctx context.Context, messageID string) (int, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(NotRunKeyPrefix + messageID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, &StoreError{Op: "read not-run deliveries", Key: NotRunKeyPrefix + messageID, Err: err}
	}
	n, ok := out.Item[AttrNotRun].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, &StoreError{Op: "read not-run deliveries", Key: NotRunKeyPrefix + messageID, Err: err}
	}
	return v, nil
}

// notRunCounts is the MemoryStore's ledger.
type notRunCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// AddNotRun implements jobs.DeliveryLedger.
func (s *MemoryStore) AddNotRun(_ context.Context, messageID string) error {
	s.notRun.mu.Lock()
	defer s.notRun.mu.Unlock()
	if s.notRun.n == nil {
		s.notRun.n = map[string]int{}
	}
	s.notRun.n[messageID]++
	return nil
}

// NotRun implements jobs.DeliveryLedger.
func (s *MemoryStore) NotRun(_ context.Context, messageID string) (int, error) {
	s.notRun.mu.Lock()
	defer s.notRun.mu.Unlock()
	return s.notRun.n[messageID], nil
}
