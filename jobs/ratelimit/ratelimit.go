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
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// bucket returns the state this store keeps of bucket id split over shards items (a limit of
// another split under the same name and key has other items, and state of its own).
func (s *Store) bucket(id string, shards int) *bucket {
	k := id + "/" + strconv.Itoa(shards)
	if b, ok := s.buckets.Load(k); ok {
		return b.(*bucket)
	}
	b, _ := s.buckets.LoadOrStore(k, &bucket{tats: make([]int64, shards)})
	return b.(*bucket)
}

// bucket is what a store knows of one bucket — its items, one per shard of the limit — and the
// reservations waiting for its next call.
type bucket struct {
	mu       sync.Mutex
	inflight bool      // a leader is taking tokens for a group
	queue    []*waiter // reservations waiting for the next call, in arrival order
	// tats holds each item's tat as last seen here, Unix µs (0: never seen). An item's own can
	// only be later: every take moves it forward, and TTL removes only an item idle for an hour.
	tats []int64
}

// item is the key of shard k of bucket id: id itself when the limit has one item.
func item(id string, k, shards int) string {
	if shards == 1 {
		return id
	}
	return id + "#" + strconv.Itoa(k)
}

// pick returns the item a group's call goes to: the one whose next token was seen due first
// (one never seen counts as due now), ties broken at random so that processes spread over the
// items. Called with b.mu held.
func (b *bucket) pick() int {
	best, ties := 0, 0
	for k, tat := range b.tats {
		switch {
		case k == 0 || tat < b.tats[best]:
			best, ties = k, 1
		case tat == b.tats[best]:
			ties++
			if rand.IntN(ties) == 0 {
				best = k
			}
		}
	}
	return best
}

// waiter is one queued reservation.
type waiter struct {
	maxWait time.Duration
	leading bool        // told to lead (set under the bucket's lock)
	done    chan result // its answer, or the word to lead the next call; buffered
}

type result struct {
	res  Reservation
	err  error
	lead bool
}

// refusal is, when the tat last seen here of item k puts its next token past maxWait from now,
// how long until it would not; else 0. Called with b.mu held; k is b.pick's, the item seen due
// first, so a refusal means every item would refuse.
func (b *bucket) refusal(k int, nowUS int64, g gcra, maxWait time.Duration) time.Duration {
	tat := b.tats[k]
	if tat == 0 {
		return 0
	}
	return max(time.Duration(tat-nowUS)*time.Microsecond-g.tolerance-maxWait, 0)
}

// seen records a tat item k was seen to hold.
func (b *bucket) seen(k int, tat int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tats[k] = max(b.tats[k], tat)
}

// maxGroup is how many reservations one call takes tokens for: the tokens due within maxWait of
// an idle bucket (a busy one fits no more), and no more than a DynamoDB write should carry.
func maxGroup(g gcra, maxWait time.Duration) int {
	return min(int((g.tolerance+maxWait)/g.interval)+1, maxGroupSize)
}

// maxGroupSize caps a group: a Lambda batch is at most 10,000 records, SQS's at most 10.
const maxGroupSize = 1000

// leadGroup takes tokens for the reservations at the head of b's queue that share the first's
// maxWait (itself included), answers each, and hands the lead to the next queued reservation, if
// any. ctx is the leader's: the group's call is bounded by it.
func (s *Store) leadGroup(ctx context.Context, b *bucket, id string, g gcra) {
	b.mu.Lock()
	maxWait := b.queue[0].maxWait
	n := 0
	for n < len(b.queue) && n < maxGroup(g, maxWait) && b.queue[n].maxWait == maxWait {
		n++
	}
	group := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	// The item the call goes to; the answer that refused the group before it may refuse it
	// again, without a call.
	k := b.pick()
	wait := b.refusal(k, s.now().Add(s.lead()).UnixMicro(), g, maxWait)
	itemID := item(id, k, len(b.tats))
	b.mu.Unlock()

	var at []time.Time
	var err error
	if wait == 0 {
		at, wait, err = s.takeN(ctx, b, k, itemID, g, n, maxWait)
	}
	for i, w := range group {
		switch {
		case err != nil:
			w.done <- result{err: err}
		case i < len(at):
			w.done <- result{res: Reservation{OK: true, At: at[i]}}
		default:
			w.done <- result{res: Reservation{Wait: wait}}
		}
	}

	b.mu.Lock()
	b.handOn()
	b.mu.Unlock()
}

// handOn makes the reservation at the head of the queue the next leader, or ends the lead when
// none waits. Called with b.mu held.
func (b *bucket) handOn() {
	if len(b.queue) == 0 {
		b.inflight = false
		return
	}
	next := b.queue[0]
	next.leading = true
	next.done <- result{lead: true}
}

// takeN takes up to n tokens due within maxWait from now (after the lead) from item k of b (its
// key id) in one conditional UpdateItem, and returns when each is due. Those it could not take (all n when it returns none)
// are refused: wait is how long until one more would be due within maxWait.
func (s *Store) takeN(ctx context.Context, b *bucket, k int, id string, g gcra, n int, maxWait time.Duration) (at []time.Time, wait time.Duration, err error) {
	ahead := g.tolerance + maxWait // how far ahead of now the next token may be
	interval := g.interval.Microseconds()
	lead := s.lead()
	now := s.now().Add(lead)
	// First guess: busy if the bucket was busy here within the last busyMemory (others have
	// likely kept it so), else idle (tat <= now). When the guess is wrong the refusal says so,
	// with the bucket's state, and the second call takes the other branch.
	b.mu.Lock()
	busy := b.tats[k] > now.Add(-max(busyMemory, g.interval)).UnixMicro()
	b.mu.Unlock()
	// dueFrom lists the m tokens after base (the tat before the take) that a take of m got.
	dueFrom := func(base int64, m, nowUS int64) []time.Time {
		ts := make([]time.Time, m)
		for i := range m {
			ts[i] = time.UnixMicro(max(nowUS, base+i*interval-g.tolerance.Microseconds()))
		}
		return ts
	}
	for range 3 {
		nowUS := now.UnixMicro()
		take := strconv.FormatUint(rand.Uint64(), 36)
		start := s.now()
		out, err := s.client.UpdateItem(ctx, s.takeInput(id, g, nowUS, ahead, busy, n, take))
		s.observe(s.now().Sub(start))
		if err == nil {
			tat, ok := tatOf(out.Attributes)
			if !ok { // not UPDATED_NEW: the idle branch's tat is known without it
				tat = nowUS + int64(n)*interval
			}
			b.seen(k, tat)
			// Those of the group a refusal cut off wait for the token after these.
			wait := max(time.Duration(tat-nowUS-ahead.Microseconds())*time.Microsecond, g.interval/2)
			return dueFrom(tat-int64(n)*interval, int64(n), nowUS), wait, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, 0, &StoreError{ID: id, Err: err}
		}
		tat, ok := tatOf(ccf.Item)
		if !ok {
			busy = false // the item is gone (TTL) or malformed: try the idle branch again
			continue
		}
		b.seen(k, tat)
		if v, _ := ccf.Item[AttrLastTake].(*types.AttributeValueMemberS); v != nil && v.Value == take {
			// This very take was written, its answer lost, and the SDK sent it again: the tokens
			// are ours (taking more would waste them). They are the n before tat.
			return dueFrom(tat-int64(n)*interval, int64(n), nowUS), 0, nil
		}
		reach := nowUS + ahead.Microseconds() // the latest tat a take may start from
		if tat > reach {
			return nil, time.Duration(tat-reach) * time.Microsecond, nil
		}
		busy = tat > nowUS
		if busy { // as many as fall due within maxWait from tat
			n = min(n, int((reach-tat)/interval)+1)
		}
		now = s.now().Add(lead)
	}
	// The bucket moved under each try: a crowd is taking its tokens. Say it is empty for a tick.
	return nil, g.interval, nil
}

// lead is how far ahead of now the next reservation is made: StoreOptions.Lead, raised to 1.5
// times the slowest recent take, at most MaxLead.
func (s *Store) lead() time.Duration {
	if s.opts.Lead <= 0 {
		return 0
	}
	slow := time.Duration(s.slow.Load()) * time.Microsecond
	return max(s.opts.Lead, min(slow+slow/2, MaxLead))
}

// observe records how long a take's call took: the high-water mark rises to it at once and
// decays by 1/16 of the difference a call, so one slow answer raises the lead for a few dozen
// takes and a lasting slowness keeps it up.
func (s *Store) observe(took time.Duration) {
	us := took.Microseconds()
	for {
		old := s.slow.Load()
		next := max(us, old-(old-us)/16)
		if s.slow.CompareAndSwap(old, next) {
			return
		}
	}
}

// takeInput is the conditional UpdateItem that takes n tokens. Idle: tat <= now (or no item),
// the new tat is now + n intervals. Busy: now < tat and the last of the n tokens is due within
// ahead of now, the new tat is tat + n intervals, and the new one comes back (UPDATED_NEW) to
// tell when they are due. Both write take, the call's own id, and hold only if the item's last
// take is another: when the SDK resends a take whose answer was lost after it was written, the
// refusal's ALL_OLD shows the take's own id and Reserve knows the tokens are its — a retried
// call does not take twice.
func (s *Store) takeInput(id string, g gcra, nowUS int64, ahead time.Duration, busy bool, n int, take string) *dynamodb.UpdateItemInput {
	interval := g.interval.Microseconds()
	span := int64(n) * interval
	exp := strconv.FormatInt((nowUS+ahead.Microseconds()+span)/1e6+bucketTTL, 10)
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 map[string]types.AttributeValue{AttrID: &types.AttributeValueMemberS{Value: id}},
		ExpressionAttributeNames:            map[string]string{"#t": AttrTAT, "#e": AttrExpiration, "#k": AttrLastTake},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	const notResent = " AND (attribute_not_exists(#k) OR #k <> :k)"
	if !busy {
		in.ConditionExpression = aws.String("(attribute_not_exists(#t) OR #t <= :now)" + notResent)
		in.UpdateExpression = aws.String("SET #t = :next, #e = :exp, #k = :k")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":now": num(nowUS), ":next": num(nowUS + span), ":exp": &types.AttributeValueMemberN{Value: exp},
			":k": &types.AttributeValueMemberS{Value: take},
		}
		return in
	}
	in.ConditionExpression = aws.String("#t > :now AND #t <= :limit" + notResent)
	in.UpdateExpression = aws.String("SET #t = #t + :i, #e = :exp, #k = :k")
	in.ReturnValues = types.ReturnValueUpdatedNew
	in.ExpressionAttributeValues = map[string]types.AttributeValue{
		":now": num(nowUS), ":limit": num(nowUS + ahead.Microseconds() - span + interval), ":i": num(span),
		":exp": &types.AttributeValueMemberN{Value: exp}, ":k": &types.AttributeValueMemberS{Value: take},
	}
	return in
}

// busyMemory is how long after its next token was due a bucket seen busy is still guessed busy.
const busyMemory = time.Second

// bucketTTL is how long, in seconds, a bucket item outlives the moment it is full again.
const bucketTTL = 3600

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
