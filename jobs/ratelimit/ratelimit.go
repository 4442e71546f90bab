// Package ratelimit holds jobs to a rate — N per period, optionally per key such as a tenant or
// an API account — across every Lambda environment and container worker that shares jobkit's
// state table in DynamoDB (the table the IdempotencyTable construct deploys).
//
// Each limit is a GCRA bucket (the generic cell rate algorithm, a token bucket kept as one
// timestamp): an item "rate#<limiter>#<key>" whose attribute "tat" is the theoretical arrival
// time of the next token. Taking tokens is one conditional UpdateItem and no read: it succeeds
// when the bucket has them and returns the bucket's state (ALL_OLD) when it has not, which says
// how long until the next token. The jobs of one process that want a bucket at the same time
// share a call — it takes a token for each — and a job the last answer already refuses costs
// no call, so a Lambda batch of rate-limited jobs costs one or two writes, not one a job. Over any window of length
// Per, no more than N + Burst - 1 tokens are handed out (N with the default Burst of 1). Each take
// writes its own random id into the item ("take") and holds only if the id there is another: a
// take whose answer was lost and that the SDK sends again is refused with its own id in the
// bucket's state, and counts as the token it took — a retried call never takes two.
//
// Middleware takes a token before a job runs and, when none is left, returns jobs.SnoozeNotRun:
// the message comes back once the bucket has refilled (plus a spread that grows with the job's
// wait, so a backlog does not poll the bucket in step), not as a failure, and — with
// jobs.Config.Deliveries set — not as an attempt.
//
// One item takes about 1,000 writes per second (DynamoDB's partition limit), and every take and
// every refusal is a write: a limit above Limit.ShardRate (400 per second) is split over
// ceil(rate/ShardRate) items "rate#<limiter>#<key>#<shard>", each holding an equal share. The
// reservations of a process still share calls: each call goes to the item the process last saw
// with the earliest next token (at random among those it has not seen), so a process's calls go
// round the items and many processes spread over them. Takes that may not wait (a group of one)
// share nothing: each goes to an item at random, the items' calls in parallel.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item attributes and key prefix, in jobkit's state table (partition key "id", TTL "expiration").
const (
	KeyPrefix      = "rate#"      // every bucket's id begins with it
	AttrID         = "id"         // the table's partition key
	AttrTAT        = "tat"        // theoretical arrival time of the next token, Unix microseconds
	AttrExpiration = "expiration" // TTL, Unix seconds: an idle bucket is full again, so it may go
	AttrLastTake   = "take"       // the id of the last take written: a resent take sees it is done
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

// interval is the time between the tokens of one bucket item.
func (l Limit) interval() time.Duration { return newGCRA(l, l.Shards()).interval }

// DynamoDBAPI is the part of the DynamoDB client a Store calls.
type DynamoDBAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Store keeps buckets in a DynamoDB table with the string partition key "id" and TTL on
// "expiration": jobkit's state table (contract.EnvIdempotencyTable names it in a worker).
type Store struct {
	client DynamoDBAPI
	table  string
	opts   StoreOptions
	now    func() time.Time
	// buckets maps a bucket item's id to what this store knows of it (*bucket): its tat as last
	// seen here and the reservations waiting to share its next call.
	buckets sync.Map
	// slow is a decaying high-water mark of how long a take's UpdateItem took here, in µs: the
	// lead of the next reservation covers it (see lead).
	slow atomic.Int64
}

// StoreOptions configures a Store.
type StoreOptions struct {
	// Lead is how far ahead of now a reservation is made: a token is never due sooner than Lead
	// from the call's start, so a job that starts at its token's time (Reservation.At) does not
	// start later than it because the call was slow — which would bunch starts together. The
	// store raises it to one and a half times the slowest recent take (a high-water mark that
	// decays by 1/16 a call), up to MaxLead, so a slow DynamoDB answer still arrives before the
	// token it reserved is due. Default DefaultLead; negative: none (and no raising).
	Lead time.Duration
}

// DefaultLead is StoreOptions.Lead's default.
const DefaultLead = 50 * time.Millisecond

// MaxLead caps the lead a store raises for slow answers: a lead is time a job waits, and in an
// idle bucket the tokens due within it are not handed out.
const MaxLead = 500 * time.Millisecond

// NewStore returns a store of buckets in table, called through client.
func NewStore(client DynamoDBAPI, table string, optFns ...func(*StoreOptions)) *Store {
	opts := StoreOptions{Lead: DefaultLead}
	for _, fn := range optFns {
		fn(&opts)
	}
	opts.Lead = max(opts.Lead, 0)
	return &Store{client: client, table: table, opts: opts, now: time.Now}
}

// Reservation is the result of Take and Reserve.
type Reservation struct {
	OK bool // a token was taken: the job may start at At
	// At is when the token taken is due (now, or up to Reserve's maxWait later).
	At time.Time
	// Wait is, when !OK, how long until Reserve with the same maxWait would take a token.
	Wait time.Duration
}

// Take takes a token from the bucket of limiter name and key if one is there now (key may be
// empty: one bucket for the limiter). See Reserve for the cost.
func (s *Store) Take(ctx context.Context, name, key string, l Limit) (Reservation, error) {
	return s.Reserve(ctx, name, key, l, 0)
}

// Reserve takes a token due within maxWait from now: the caller starts its work at At, not
// before, so the work's rate keeps the limit whatever the callers' timing (a batch of jobs
// arriving at one instant is spread over the tokens' times rather than refused all but one).
//
// Concurrent reservations of one bucket in a process share a call: while one UpdateItem is in
// flight the others queue, and the next call takes a token for each of them at once (as many as
// fall due within maxWait), so a Lambda batch of 25 rate-limited jobs costs one or two writes,
// not 25. A reservation that the bucket's state last seen here already refuses (its next token
// is due past maxWait; the state only moves later) is answered without a call.
//
// Cost: at most one UpdateItem per reservation, usually fewer: one per group of concurrent
// reservations, rarely a second when the bucket's state changed between the guess of the first
// and its write; none for a refusal the last answer already implies. No read.
func (s *Store) Reserve(ctx context.Context, name, key string, l Limit, maxWait time.Duration) (Reservation, error) {
	if err := checkName(name); err != nil {
		return Reservation{}, err
	}
	if err := l.Validate(); err != nil {
		return Reservation{}, err
	}
	id := BucketID(name, key)
	shards := l.Shards()
	g := newGCRA(l, shards)
	maxWait = max(maxWait, 0)
	if shards > 1 && maxGroup(g, maxWait) == 1 {
		// A call takes one token (no wait allowed past the burst): nothing to share, so each
		// item keeps a queue of its own and a process's calls run in parallel over the items.
		id, shards = id+"#"+strconv.Itoa(rand.IntN(shards)), 1
	}
	// One queue for all the bucket's items: a group's call goes to one item, picked when the
	// call is made, so concurrent reservations share calls however the limit is split.
	b := s.bucket(id, shards)

	b.mu.Lock()
	if wait := b.refusal(b.pick(), s.now().Add(s.lead()).UnixMicro(), g, maxWait); wait > 0 {
		b.mu.Unlock()
		return Reservation{Wait: wait}, nil
	}
	w := &waiter{maxWait: maxWait, done: make(chan result, 1)}
	b.queue = append(b.queue, w)
	leader := !b.inflight
	b.inflight = true
	b.mu.Unlock()

	for !leader {
		select {
		case r := <-w.done:
			if !r.lead {
				return r.res, r.err
			}
			leader = true
		case <-ctx.Done():
			b.mu.Lock()
			if i := slices.Index(b.queue, w); i >= 0 && !w.leading {
				b.queue = slices.Delete(b.queue, i, i+1)
				b.mu.Unlock()
				return Reservation{}, &StoreError{ID: id, Err: context.Cause(ctx)}
			}
			b.mu.Unlock()
			// Taken into a group (its answer is on the way) or made leader: wait for it.
			r := <-w.done
			if !r.lead {
				return r.res, r.err
			}
			leader = true
		}
	}
	if err := ctx.Err(); err != nil {
		// Its caller has gone: it leaves the queue (at its head) and passes the lead on.
		b.mu.Lock()
		b.queue = slices.Delete(b.queue, 0, 1)
		b.handOn()
		b.mu.Unlock()
		return Reservation{}, &StoreError{ID: id, Err: context.Cause(ctx)}
	}
	s.leadGroup(ctx, b, id, g)
	r := <-w.done // the group the leader took includes itself
	return r.res, r.err
}

// BucketID returns the item id of the bucket of limiter name and key: "rate#<name>#<key>"
// ("rate#<name>" for an empty key); a sharded limit appends "#<shard>". The key often comes from
// job args (a tenant), so its '%' and '#' are escaped (%25, %23): key "A#3" cannot share tenant
// "A"'s shard 3.
func BucketID(name, key string) string {
	if key == "" {
		return KeyPrefix + name
	}
	return KeyPrefix + name + "#" + keyEscaper.Replace(key)
}

var keyEscaper = strings.NewReplacer("%", "%25", "#", "%23")

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
