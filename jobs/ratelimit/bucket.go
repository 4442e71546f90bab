package ratelimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
