// Package ratelimit holds jobs to a rate — N per period, optionally per key such as a tenant or
// an API account — across every Lambda environment and container worker that shares jobkit's
// state table in DynamoDB (the table the IdempotencyTable construct deploys).
//
// Each limit is a GCRA bucket (the generic cell rate algorithm, a token bucket kept as one
// timestamp): an item "rate#<limiter>#<key>" whose attribute "tat" is the theoretical arrival
// time of the next token. Taking a token is one conditional UpdateItem and no read: it succeeds
// when the bucket has a token and returns the bucket's state (ALL_OLD) when it has not, so a
// refusal also costs one call and says how long until the next token. Over any window of length
// Per, no more than N + Burst - 1 tokens are handed out (N with the default Burst of 1).
//
// Middleware takes a token before a job runs and, when none is left, returns jobs.SnoozeNotRun:
// the message comes back once the bucket has refilled (plus a spread that grows with the job's
// wait, so a backlog does not poll the bucket in step), not as a failure, and — with
// jobs.Config.Deliveries set — not as an attempt.
//
// One item takes about 1,000 writes per second (DynamoDB's partition limit), and every take and
// every refusal is a write: a limit above Limit.ShardRate (400 per second) is split over
// ceil(rate/ShardRate) items "rate#<limiter>#<key>#<shard>", each holding an equal share, and a
// take tries a random shard.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item attributes and key prefix, in jobkit's state table (partition key "id", TTL "expiration").
const (
	KeyPrefix      = "rate#"      // every bucket's id begins with it
	AttrID         = "id"         // the table's partition key
	AttrTAT        = "tat"        // theoretical arrival time of the next token, Unix microseconds
	AttrExpiration = "expiration" // TTL, Unix seconds: an idle bucket is full again, so it may go
)

// ShardRate is the most tokens per second one bucket item hands out before a limit is sharded:
// well under the ~1,000 writes per second of a DynamoDB partition, since refusals are writes too.
const ShardRate = 400

// Limit is N tokens per Per. The zero Burst means 1: tokens are spaced Per/N apart, so no window
// of length Per sees more than N. A larger Burst lets an idle bucket hand out Burst tokens at
// once (then any window of length Per may see N + Burst - 1).
type Limit struct {
	N     int
	Per   time.Duration
	Burst int
}

// PerSecond returns a limit of n per second.
func PerSecond(n int) Limit { return Limit{N: n, Per: time.Second} }

// PerMinute returns a limit of n per minute.
func PerMinute(n int) Limit { return Limit{N: n, Per: time.Minute} }

// Validate reports a limit that cannot be kept.
func (l Limit) Validate() error {
	switch {
	case l.N <= 0:
		return fmt.Errorf("ratelimit: N is %d, want at least 1", l.N)
	case l.Per <= 0:
		return fmt.Errorf("ratelimit: Per is %s, want more than 0", l.Per)
	case l.Burst < 0:
		return fmt.Errorf("ratelimit: Burst is %d, want 0 or more", l.Burst)
	}
	return nil
}

// Shards is how many bucket items the limit is split over: ceil(rate/ShardRate), at least 1.
func (l Limit) Shards() int {
	rate := float64(l.N) / l.Per.Seconds()
	return max(1, int(math.Ceil(rate/ShardRate)))
}

// DynamoDBAPI is the part of the DynamoDB client a Store calls.
type DynamoDBAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Store keeps buckets in a DynamoDB table with the string partition key "id" and TTL on
// "expiration": jobkit's state table (jobs.EnvIdempotencyTable names it in a worker).
type Store struct {
	client DynamoDBAPI
	table  string
	now    func() time.Time
}

// NewStore returns a store of buckets in table, called through client.
func NewStore(client DynamoDBAPI, table string) *Store {
	return &Store{client: client, table: table, now: time.Now}
}

// Decision is the result of Take.
type Decision struct {
	OK bool // a token was taken
	// Wait is, when !OK, how long until the bucket has a token again (at least one tick).
	Wait time.Duration
}

// Take takes a token from the bucket of limiter name and key (key may be empty: one bucket for
// the limiter). Cost: one UpdateItem, whether it takes a token or not; rarely a second, when
// the bucket's state changed between the guess of the first and its write.
func (s *Store) Take(ctx context.Context, name, key string, l Limit) (Decision, error) {
	if err := checkName(name); err != nil {
		return Decision{}, err
	}
	if err := l.Validate(); err != nil {
		return Decision{}, err
	}
	id := BucketID(name, key)
	shards := l.Shards()
	if shards > 1 {
		id += "#" + strconv.Itoa(rand.IntN(shards))
	}
	g := newGCRA(l, shards)
	now := s.now()
	// First guess: the bucket is idle or nearly (tat <= now). When it is busy the answer says so,
	// and the second call uses the state it returned.
	busy := false
	for range 3 {
		nowUS := now.UnixMicro()
		in := s.takeInput(id, g, nowUS, busy)
		_, err := s.client.UpdateItem(ctx, in)
		if err == nil {
			return Decision{OK: true}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return Decision{}, &StoreError{ID: id, Err: err}
		}
		tat, ok := tatOf(ccf.Item)
		if !ok {
			busy = false // the item is gone (TTL) or malformed: try the idle branch again
			continue
		}
		if wait := g.wait(tat, nowUS); wait > 0 {
			return Decision{Wait: wait}, nil
		}
		busy = tat > nowUS
		now = s.now()
	}
	// The bucket moved under each try: a crowd is taking its tokens. Say it is empty for a tick.
	return Decision{Wait: g.interval}, nil
}

// takeInput is the conditional UpdateItem that takes one token. idle: tat <= now (or no item),
// the new tat is now + interval. busy: now < tat <= now + tolerance, the new tat is tat + interval.
func (s *Store) takeInput(id string, g gcra, nowUS int64, busy bool) *dynamodb.UpdateItemInput {
	interval := g.interval.Microseconds()
	exp := strconv.FormatInt((nowUS+g.tolerance.Microseconds()+interval)/1e6+bucketTTL, 10)
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 map[string]types.AttributeValue{AttrID: &types.AttributeValueMemberS{Value: id}},
		ExpressionAttributeNames:            map[string]string{"#t": AttrTAT, "#e": AttrExpiration},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	if !busy {
		in.ConditionExpression = aws.String("attribute_not_exists(#t) OR #t <= :now")
		in.UpdateExpression = aws.String("SET #t = :next, #e = :exp")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":now": num(nowUS), ":next": num(nowUS + interval), ":exp": &types.AttributeValueMemberN{Value: exp},
		}
		return in
	}
	in.ConditionExpression = aws.String("#t > :now AND #t <= :limit")
	in.UpdateExpression = aws.String("SET #t = #t + :i, #e = :exp")
	in.ExpressionAttributeValues = map[string]types.AttributeValue{
		":now": num(nowUS), ":limit": num(nowUS + g.tolerance.Microseconds()), ":i": num(interval),
		":exp": &types.AttributeValueMemberN{Value: exp},
	}
	return in
}

// bucketTTL is how long, in seconds, a bucket item outlives the moment it is full again.
const bucketTTL = 3600

// BucketID returns the item id of the bucket of limiter name and key: "rate#<name>#<key>"
// ("rate#<name>" for an empty key); a sharded limit appends "#<shard>".
func BucketID(name, key string) string {
	if key == "" {
		return KeyPrefix + name
	}
	return KeyPrefix + name + "#" + key
}

// checkName refuses a limiter name that would make bucket ids ambiguous.
func checkName(name string) error {
	if name == "" || strings.Contains(name, "#") {
		return fmt.Errorf("ratelimit: limiter name %q: want a non-empty name without '#'", name)
	}
	return nil
}

func tatOf(item map[string]types.AttributeValue) (int64, bool) {
	n, ok := item[AttrTAT].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

// StoreError is a DynamoDB call that failed (not a bucket that was empty).
type StoreError struct {
	ID  string
	Err error
}

// Error describes the failure.
func (e *StoreError) Error() string { return "ratelimit: bucket " + e.ID + ": " + e.Err.Error() }

// Unwrap returns the DynamoDB error.
func (e *StoreError) Unwrap() error { return e.Err }

// gcra is a limit as the algorithm uses it: the interval between tokens (of one shard) and how
// far ahead of now the next token's time may be while a token is still handed out.
type gcra struct {
	interval  time.Duration
	tolerance time.Duration
}

func newGCRA(l Limit, shards int) gcra {
	interval := time.Duration(float64(l.Per) * float64(shards) / float64(l.N))
	interval = max(interval, time.Microsecond)
	burst := max(l.Burst, 1)
	return gcra{interval: interval, tolerance: time.Duration(burst-1) * interval}
}

// wait is how long after nowUS a bucket whose next token is at tat has one: 0 if it has one now.
func (g gcra) wait(tat, nowUS int64) time.Duration {
	w := time.Duration(tat-nowUS-g.tolerance.Microseconds()) * time.Microsecond
	return max(w, 0)
}
