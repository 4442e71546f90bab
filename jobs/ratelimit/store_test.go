package ratelimit

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// clock is a settable clock for a Store: the bucket's arithmetic is checked at chosen instants,
// its conditions by the emulator's DynamoDB.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.UnixMicro(c.t.Load()) }
func (c *clock) advance(d time.Duration) { c.t.Add(d.Microseconds()) }
func newClock(t0 time.Time) *clock       { c := &clock{}; c.t.Store(t0.UnixMicro()); return c }
func storeAt(s *Store, c *clock) *Store  { s.now = c.now; return s }

// epoch is when testStore's clock starts.
var epoch = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// testStore returns a Store on a new table whose time is the returned clock's, at epoch.
func testStore(t *testing.T) (*Store, *clock) {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	c := newClock(epoch)
	return storeAt(NewStore(dynamodb.NewFromConfig(cfg), table, func(o *StoreOptions) { o.Lead = -1 }), c), c
}

func TestTakeSpacesTokensByTheInterval(t *testing.T) {
	t.Parallel()
	s, c := testStore(t)
	ctx := context.Background()
	l := PerSecond(4) // a token every 250 ms

	d, err := s.Take(ctx, "api", "", l)
	require.NoError(t, err)
	require.True(t, d.OK, "an unknown bucket is full")

	d, err = s.Take(ctx, "api", "", l)
	require.NoError(t, err)
	require.False(t, d.OK, "the next token is 250 ms away")
	assert.Equal(t, 250*time.Millisecond, d.Wait)

	c.advance(100 * time.Millisecond)
	d, err = s.Take(ctx, "api", "", l)
	require.NoError(t, err)
	require.False(t, d.OK)
	assert.Equal(t, 150*time.Millisecond, d.Wait)

	c.advance(150 * time.Millisecond)
	d, err = s.Take(ctx, "api", "", l)
	require.NoError(t, err)
	assert.True(t, d.OK, "refilled after the interval")

	// Another key of the same limiter has its own bucket.
	d, err = s.Take(ctx, "api", "tenant-b", l)
	require.NoError(t, err)
	assert.True(t, d.OK)
}

func TestTakeAllowsABurstFromAnIdleBucket(t *testing.T) {
	t.Parallel()
	s, c := testStore(t)
	ctx := context.Background()
	l := Limit{N: 10, Per: time.Second, Burst: 3}
	var granted int
	for range 5 {
		d, err := s.Take(ctx, "burst", "", l)
		require.NoError(t, err)
		if d.OK {
			granted++
		}
	}
	assert.Equal(t, 3, granted, "Burst tokens at one instant, then none")
	c.advance(100 * time.Millisecond)
	d, err := s.Take(ctx, "burst", "", l)
	require.NoError(t, err)
	assert.True(t, d.OK, "one more after one interval")
}

// Many takers at one instant, as concurrent environments would be: the bucket's conditions let
// exactly one token through per shard, however the calls interleave.
func TestConcurrentTakersGetOnlyTheTokensThere(t *testing.T) {
	t.Parallel()
	s, _ := testStore(t)
	for _, l := range []Limit{PerSecond(5), PerSecond(1000)} {
		name := "crowd" + map[bool]string{true: "sharded", false: "single"}[l.Shards() > 1]
		var granted atomic.Int32
		var wg sync.WaitGroup
		for range 24 {
			wg.Go(func() {
				d, err := s.Take(context.Background(), name, "", l)
				assert.NoError(t, err)
				if d.OK {
					granted.Add(1)
				}
			})
		}
		wg.Wait()
		assert.GreaterOrEqual(t, int(granted.Load()), 1, "%s: a full bucket gives a token", name)
		assert.LessOrEqual(t, int(granted.Load()), l.Shards(), "%s: at most one token per shard at one instant", name)
	}
}

// Reservations hand out the tokens due within maxWait, each at its own time, spaced by the
// interval, also when many take at one instant; past maxWait the answer is a refusal saying how
// long until one more would be handed out.
func TestReserveSpacesConcurrentTakersByTheInterval(t *testing.T) {
	t.Parallel()
	s, _ := testStore(t)
	t0 := epoch
	l := PerSecond(5) // a token every 200 ms: 6 due within a second (at 0, 200, ..., 1000 ms)
	var mu sync.Mutex
	var at []time.Time
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			r, err := s.Reserve(context.Background(), "reserve", "", l, time.Second)
			assert.NoError(t, err)
			if r.OK {
				mu.Lock()
				at = append(at, r.At)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, len(at), 6)
	require.GreaterOrEqual(t, len(at), 1)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	assert.True(t, t0.Equal(at[0]), "the first is due now: %s", at[0])
	for i := 1; i < len(at); i++ {
		assert.Equal(t, 200*time.Millisecond, at[i].Sub(at[i-1]), "tokens %d and %d", i-1, i)
	}
	for len(at) < 6 { // what the crowd's races left, taken one by one
		r, err := s.Reserve(context.Background(), "reserve", "", l, time.Second)
		require.NoError(t, err)
		require.True(t, r.OK)
		at = append(at, r.At)
	}
	assert.True(t, t0.Add(time.Second).Equal(at[5]), "the sixth: %s", at[5])
	r, err := s.Reserve(context.Background(), "reserve", "", l, time.Second)
	require.NoError(t, err)
	require.False(t, r.OK, "the seventh token is due after maxWait")
	assert.Equal(t, 200*time.Millisecond, r.Wait)
}

func TestInvalidLimitsAndNamesFailBeforeAnyCall(t *testing.T) {
	t.Parallel()
	s := NewStore(nil, "unused") // a call would panic on the nil client
	for _, tc := range []struct {
		name string
		l    Limit
	}{{"api", Limit{}}, {"api", Limit{N: 1}}, {"api", Limit{N: 1, Per: time.Second, Burst: -1}}, {"", PerSecond(1)}, {"a#b", PerSecond(1)}} {
		_, err := s.Take(context.Background(), tc.name, "", tc.l)
		assert.Error(t, err, "%q %+v", tc.name, tc.l)
	}
}

func TestShards(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 1, PerSecond(400).Shards())
	assert.Equal(t, 2, PerSecond(401).Shards())
	assert.Equal(t, 3, PerSecond(1000).Shards())
	assert.Equal(t, 1, PerMinute(20000).Shards(), "333/s")
	g := newGCRA(PerSecond(1000), 3)
	assert.Equal(t, 3*time.Millisecond, g.interval, "each shard holds a third of the rate")
}

func TestSnoozeSpreadGrowsWithTheJobsWait(t *testing.T) {
	t.Parallel()
	for range 100 {
		d := snoozeFor(200*time.Millisecond, 0, time.Minute)
		assert.Equal(t, 200*time.Millisecond, d, "a fresh job waits for the refill")
		d = snoozeFor(200*time.Millisecond, 10*time.Second, time.Minute)
		assert.GreaterOrEqual(t, d, 5200*time.Millisecond)
		assert.LessOrEqual(t, d, 15200*time.Millisecond)
		assert.Equal(t, time.Minute, snoozeFor(time.Second, time.Hour, time.Minute), "capped")
	}
}

// The wait a snooze spreads by is the job's age, but no more than 2^(deliveries-1) seconds: a job
// refused again and again (a delivery per snooze) is spread by its age, one that aged for other
// reasons and is refused once is not sent away for minutes.
func TestSnoozeWaitIsBoundedByDeliveries(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	row := func(age time.Duration, deliveries int) *jobs.JobRow {
		return &jobs.JobRow{FirstReceivedAt: now.Add(-age), Deliveries: deliveries}
	}
	assert.Equal(t, 2*time.Second, waitedFor(row(150*time.Second, 2), now), "aged 150 s, delivered twice")
	assert.Equal(t, 100*time.Second, waitedFor(row(100*time.Second, 9), now), "refused eight times: its age")
	assert.Equal(t, 150*time.Second, waitedFor(row(150*time.Second, 0), now), "deliveries unknown: its age")
	assert.Zero(t, waitedFor(&jobs.JobRow{Deliveries: 3}, now), "first receive unknown")
	assert.Equal(t, time.Hour, waitedFor(row(time.Hour, 200), now), "no overflow")
}

// A key from job args cannot name another key's bucket or shard.
func TestBucketIDEscapesKeys(t *testing.T) {
	t.Parallel()
	require.Equal(t, "rate#api#tenant-1", BucketID("api", "tenant-1"))
	require.NotEqual(t, BucketID("api", "A")+"#3", BucketID("api", "A#3"), "key A#3 is not tenant A's shard 3")
	require.NotEqual(t, BucketID("api", "A%233"), BucketID("api", "A#3"))
	require.Equal(t, "rate#api#A%233", BucketID("api", "A#3"))
}

// countingDB counts a store's UpdateItem calls, by item.
type countingDB struct {
	DynamoDBAPI
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.mu.Lock()
	c.calls[in.Key[AttrID].(*types.AttributeValueMemberS).Value]++
	c.mu.Unlock()
	return c.DynamoDBAPI.UpdateItem(ctx, in, optFns...)
}

// A limit split over several items still shares calls: the concurrent reservations of a process
// queue for one call, which goes to one item, so a Lambda batch's jobs cost a write or two, not
// one each; and the process's calls go round the items.
func TestReservationsOfASplitLimitShareCalls(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "state", AttrID, "")
	db := &countingDB{DynamoDBAPI: dynamodb.NewFromConfig(cfg), calls: map[string]int{}}
	s := NewStore(db, table, func(o *StoreOptions) { o.Lead = -1 })
	l := PerSecond(1000)
	require.Equal(t, 3, l.Shards())
	const jobs = 25
	for round := range 4 {
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range jobs {
			wg.Go(func() {
				r, err := s.Reserve(context.Background(), "split", "", l, time.Second)
				assert.NoError(t, err)
				if r.OK {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		assert.EqualValues(t, jobs, ok.Load(), "round %d: a token each", round)
	}
	total := 0
	for id, n := range db.calls {
		assert.Contains(t, []string{"rate#split#0", "rate#split#1", "rate#split#2"}, id)
		total += n
	}
	assert.LessOrEqual(t, total, 4*4, "%d calls for %d reservations: %v", total, 4*jobs, db.calls)
	assert.Len(t, db.calls, 3, "the calls go round the items: %v", db.calls)

	// Another rule of the same name with a limit of one item has its own item and state.
	r, err := s.Reserve(context.Background(), "split", "", PerSecond(100), time.Second)
	require.NoError(t, err)
	assert.True(t, r.OK)
	assert.Equal(t, 1, db.calls["rate#split"])
}
