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
//	id = "jobkit#not_run#<message id>", not_run (N), started (N), expiration (TTL, epoch s)
//
// started counts the runs begun on a redelivery that have not reported (jobs.DeliveryLedger): a run
// that died leaves its mark.
// It is keyed by message id, not job key: a job redriven from the DLQ is a new message and gets
// its attempts afresh. The item lives as long as SQS can keep a message (14 days).
const (
	// NotRunKeyPrefix begins the key of every ledger item (a worker's IAM grant allows it
	// beside its own kinds' keys).
	NotRunKeyPrefix = "jobkit#not_run#"
	// AttrNotRun is the count of deliveries that did not run, on a ledger item.
	AttrNotRun = "not_run"
	// AttrStarted is the count of runs started on a redelivery, on a ledger item.
	AttrStarted = "started"
	// notRunExpiry is SQS's longest message retention.
	notRunExpiry = 14 * 24 * time.Hour
)

var (
	_ jobs.DeliveryLedger = (*DynamoDBStore)(nil)
	_ jobs.DeliveryLedger = (*MemoryStore)(nil)
)

// AddDeliveries implements jobs.DeliveryLedger: one UpdateItem adding both counts.
func (s *DynamoDBStore) AddDeliveries(ctx context.Context, messageID string, notRun, started int) error {
	exp := strconv.FormatInt(time.Now().Add(notRunExpiry).Unix(), 10)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      keyOf(NotRunKeyPrefix + messageID),
		UpdateExpression:         aws.String("ADD #n :n, #s :s SET #e = :exp"),
		ExpressionAttributeNames: map[string]string{"#n": AttrNotRun, "#s": AttrStarted, "#e": AttrExpiration},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n":   &types.AttributeValueMemberN{Value: strconv.Itoa(notRun)},
			":s":   &types.AttributeValueMemberN{Value: strconv.Itoa(started)},
			":exp": &types.AttributeValueMemberN{Value: exp},
		},
	})
	if err != nil {
		return &StoreError{Op: "add deliveries", Key: NotRunKeyPrefix + messageID, Err: err}
	}
	return nil
}

// Deliveries implements jobs.DeliveryLedger: one strongly consistent GetItem.
func (s *DynamoDBStore) Deliveries(ctx context.Context, messageID string) (notRun, started int, err error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(NotRunKeyPrefix + messageID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, 0, &StoreError{Op: "read deliveries", Key: NotRunKeyPrefix + messageID, Err: err}
	}
	for attr, dst := range map[string]*int{AttrNotRun: &notRun, AttrStarted: &started} {
		n, ok := out.Item[attr].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		if *dst, err = strconv.Atoi(n.Value); err != nil {
			return 0, 0, &StoreError{Op: "read deliveries", Key: NotRunKeyPrefix + messageID, Err: err}
		}
	}
	return notRun, started, nil
}

// notRunCounts is the MemoryStore's ledger.
type notRunCounts struct {
	mu      sync.Mutex
	n       map[string]int
	started map[string]int
}

// AddDeliveries implements jobs.DeliveryLedger.
func (s *MemoryStore) AddDeliveries(_ context.Context, messageID string, notRun, started int) error {
	s.notRun.mu.Lock()
	defer s.notRun.mu.Unlock()
	if s.notRun.n == nil {
		s.notRun.n, s.notRun.started = map[string]int{}, map[string]int{}
	}
	s.notRun.n[messageID] += notRun
	s.notRun.started[messageID] += started
	return nil
}

// Deliveries implements jobs.DeliveryLedger.
func (s *MemoryStore) Deliveries(_ context.Context, messageID string) (notRun, started int, err error) {
	s.notRun.mu.Lock()
	defer s.notRun.mu.Unlock()
	return s.notRun.n[messageID], s.notRun.started[messageID], nil
}
