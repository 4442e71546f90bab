package state

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// ListOptions choose the jobs Table.List returns.
type ListOptions struct {
	// Queue is the jobs' queue, by name or URL. Required.
	Queue string
	// State is the jobs' state: enqueued, running, retrying, succeeded, dead or cancelled. Required.
	State jobs.JobState
	// Kind keeps the jobs of this kind only; "" keeps every kind.
	Kind string
	// Limit is the most jobs a page holds, 1 to MaxListLimit; 0 means DefaultListLimit.
	Limit int
	// Cursor continues a listing: the previous page's Next. "" starts at the newest job.
	Cursor string
}

// Page sizes of Table.List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// JobPage is one page of Table.List.
type JobPage struct {
	// Jobs are in the asked state, newest state change first, each as Table.JobStatus shows it.
	Jobs []jobs.JobStatus
	// Next continues the listing (ListOptions.Cursor); "" when there is nothing more.
	Next string
}

// ErrBadListOptions is wrapped by Table.List's error for options it cannot use (a missing queue,
// an unknown state, a limit out of range, a cursor it did not make).
var ErrBadListOptions = errors.New("state: invalid list options")

// maxListRounds bounds the queries behind one page: a page whose entries have mostly moved on
// comes back short, with a Next.
const maxListRounds = 8

// minQuery is the fewest index entries a round reads: entries that lag behind their jobs are
// skipped, so a round reads more than the jobs it still needs.
const minQuery = 25

// List returns a queue's jobs in one state, newest first, a page at a time. It reads the state
// table's index contract.StateIndex (partition "<queue>#<state>", sorted by the time of the
// change: never a scan of the table), then each entry's job as JobStatus reads it — its job item
// and its idempotency record, in two consistent BatchGetItem calls per round — and keeps the jobs
// whose state is State now. An entry a job has moved on from since it was written (a job item
// that still says enqueued after a run its idempotency record holds, a claim whose lease ran out)
// is skipped; one whose job cannot be what it says again (see resolution.settled) is also taken
// out of the index (a conditional UpdateItem that removes its index attributes, on the condition
// that they are unchanged; best effort: a caller without dynamodb:UpdateItem skips it again next
// time). A page can hold fewer than Limit jobs while Next is set.
//
// Cost per round: one Query of the index (a read unit per 4 KB of entries, which hold keys and
// kind only), two BatchGetItem calls of up to 100 items, and one UpdateItem per lagging entry,
// once. The writes that keep the index cost an index write beside each state write that changes
// a job's state (not its progress or lease: those are not in the index).
func (t *Table) List(ctx context.Context, opts ListOptions) (JobPage, error) {
	var page JobPage
	if opts.Queue == "" {
		return page, fmt.Errorf("%w: a queue is required", ErrBadListOptions)
	}
	if !slices.Contains(listStates, opts.State) {
		return page, fmt.Errorf("%w: state %q: want one of %v", ErrBadListOptions, opts.State, listStates)
	}
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return page, fmt.Errorf("%w: limit %d: want 1-%d", ErrBadListOptions, limit, MaxListLimit)
	}
	partition := contract.ListKey(opts.Queue, string(opts.State))
	start, err := decodeCursor(opts.Cursor, partition)
	if err != nil {
		return page, err
	}
	b := expression.NewBuilder().WithKeyCondition(expression.Key(contract.AttrListKey).Equal(expression.Value(partition)))
	if opts.Kind != "" {
		b = b.WithFilter(expression.Name(attrKind).Equal(expression.Value(opts.Kind)))
	}
	expr, err := b.Build()
	if err != nil {
		return page, err
	}
	seen := map[string]bool{}
	unlistDenied := false // the caller may not take lagging entries out: not tried again in this call
	for round := 0; len(page.Jobs) < limit && round < maxListRounds; round++ {
		out, err := t.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(t.name), IndexName: aws.String(contract.StateIndex),
			KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(min(max(limit-len(page.Jobs), minQuery), MaxListLimit))),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return page, fmt.Errorf("state: list %s jobs of %s: %w", opts.State, opts.Queue, err)
		}
		found, err := t.resolve(ctx, out.Items)
		if err != nil {
			return page, err
		}
		full := false
		var lagging []map[string]types.AttributeValue
		for n, f := range found {
			switch st := f.st; {
			case st == nil: // the entry's item is gone (expired)
			case st.State != opts.State:
				if f.settled {
					lagging = append(lagging, out.Items[n])
				}
			case !seen[st.ID]:
				seen[st.ID] = true
				page.Jobs = append(page.Jobs, *st)
			}
			if len(page.Jobs) == limit && n < len(found)-1 {
				// The page ends inside this round: the next one starts after this entry.
				start, full = entryKey(out.Items[n]), true
				break
			}
		}
		if !full {
			start = out.LastEvaluatedKey
		}
		if !unlistDenied {
			unlistDenied = t.unlist(ctx, lagging)
		}
		if len(start) == 0 {
			break
		}
	}
	page.Next, err = encodeCursor(start)
	return page, err
}

// listStates are the states List can list.
var listStates = []jobs.JobState{jobs.StateEnqueued, jobs.StateRunning, jobs.StateRetrying,
	jobs.StateSucceeded, jobs.StateDead, jobs.StateCancelled}

// entryKey is an index entry's key: where a query that ended at it continues.
func entryKey(e map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		idempotency.AttrID: e[idempotency.AttrID], contract.AttrListKey: e[contract.AttrListKey], contract.AttrListAt: e[contract.AttrListAt],
	}
}

// unlist takes entries their jobs have moved on from for good out of the index: it removes each
// item's index attributes if they are still the entry's (a state written since keeps its own),
// a few at a time. Best effort; it reports whether DynamoDB refused the caller the write.
func (t *Table) unlist(ctx context.Context, entries []map[string]types.AttributeValue) (denied bool) {
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, 8)
		refused atomic.Bool
	)
	for _, e := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if refused.Load() {
				return
			}
			cond := expression.Name(contract.AttrListKey).Equal(expression.Value(e[contract.AttrListKey])).
				And(expression.Name(contract.AttrListAt).Equal(expression.Value(e[contract.AttrListAt])))
			expr, err := expression.NewBuilder().WithCondition(cond).
				WithUpdate(expression.Remove(expression.Name(contract.AttrListKey)).Remove(expression.Name(contract.AttrListAt))).Build()
			if err != nil {
				return
			}
			_, err = t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(t.name), Key: map[string]types.AttributeValue{idempotency.AttrID: e[idempotency.AttrID]},
				UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
				ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			})
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode() == "AccessDeniedException" {
				refused.Store(true)
			}
		}()
	}
	wg.Wait()
	return refused.Load()
}

// resolution is an index entry's job as List reads it.
type resolution struct {
	st *jobs.JobStatus // nil: the entry's item is gone
	// settled: if the job's state is not the entry's, it will not be again without a new write
	// (which brings its own entry): the entry can go. A mismatch that rests on a lease or a
	// cancellation still live is not settled: the lease may run out, and the job be what its
	// entry says again.
	settled bool
}

// resolve reads the jobs of index entries (job items and idempotency records; the index holds
// their keys and kind only) as JobStatus does: each entry's item, then the other half of its
// job's state, consistently. The result is in entry order; nil for an entry whose item is gone.
func (t *Table) resolve(ctx context.Context, entries []map[string]types.AttributeValue) ([]resolution, error) {
	keys := make([]string, len(entries))
	for n, e := range entries {
		keys[n] = str(e, idempotency.AttrID)
	}
	own, err := t.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var others []string
	for _, k := range keys {
		item := own[k]
		if item == nil {
			continue
		}
		if id, ok := strings.CutPrefix(k, PrefixJob); ok {
			if ik := str(item, attrIdemKey); ik != "" && !final(statusOf(id, item).State) {
				others = append(others, ik)
			}
		} else if jid := str(item, idempotency.AttrJobID); jid != "" {
			others = append(others, PrefixJob+jid)
		}
	}
	other, err := t.batchGet(ctx, others)
	if err != nil {
		return nil, err
	}
	now := t.o.Now()
	out := make([]resolution, len(entries))
	for n, k := range keys {
		item := own[k]
		if item == nil {
			continue
		}
		var (
			st      jobs.JobStatus
			settled bool
		)
		if id, ok := strings.CutPrefix(k, PrefixJob); ok { // a job item, and maybe its record
			var rec *idempotency.Record
			if r := other[str(item, attrIdemKey)]; r != nil {
				rec, _ = idempotency.RecordFromItem(r)
			}
			st = resolved(id, item, rec, now)
			// A completed record is final, and so is the item's own dead or cancelled (written
			// without its queue, its entry stayed); a live claim or cancellation is not.
			settled = (rec != nil && rec.Status == idempotency.StatusCompleted) || final(statusOf(id, item).State)
		} else { // an idempotency record, and its job's item if it has one
			rec, err := idempotency.RecordFromItem(item)
			if err != nil || rec.JobID == "" {
				continue
			}
			ji := other[PrefixJob+rec.JobID]
			if ji == nil {
				ji = map[string]types.AttributeValue{attrKind: s(rec.Kind), attrQueue: s(rec.Queue), attrState: s(string(jobs.StateEnqueued))}
			}
			st = resolved(rec.JobID, ji, rec, now)
			itemSt := statusOf(rec.JobID, ji)
			// The job's item ended it or recorded a later state, or the claim's lease ended an
			// hour ago (no renewal comes that late).
			settled = final(itemSt.State) || itemSt.Since.After(rec.StartedAt) ||
				(rec.Status == idempotency.StatusInProgress && now.Sub(rec.LeaseEnd) > time.Hour)
		}
		st = withoutStaleProgress(st)
		out[n] = resolution{st: &st, settled: settled}
	}
	return out, nil
}

// batchGet reads items by key, 100 a call (BatchGetItem's most), consistently; missing items are
// absent from the map.
func (t *Table) batchGet(ctx context.Context, keys []string) (map[string]map[string]types.AttributeValue, error) {
	got := map[string]map[string]types.AttributeValue{}
	keys = slices.Compact(slices.Sorted(slices.Values(keys))) // a copy: the caller's order stays
	for len(keys) > 0 {
		chunk := keys[:min(100, len(keys))]
		keys = keys[len(chunk):]
		req := map[string]types.KeysAndAttributes{t.name: {ConsistentRead: aws.Bool(true)}}
		ka := req[t.name]
		for _, k := range chunk {
			ka.Keys = append(ka.Keys, key(k))
		}
		req[t.name] = ka
		for try := 0; len(req) > 0 && len(req[t.name].Keys) > 0; try++ {
			if try == 8 {
				return nil, fmt.Errorf("state: %d items not read: DynamoDB left them unprocessed", len(req[t.name].Keys))
			}
			out, err := t.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("state: read job states: %w", err)
			}
			for _, item := range out.Responses[t.name] {
				got[str(item, idempotency.AttrID)] = item
			}
			req = out.UnprocessedKeys
			if len(req) > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Duration(10<<try) * time.Millisecond):
				}
			}
		}
	}
	return got, nil
}

// The cursor is the index's LastEvaluatedKey — the table's key and the index's, strings but for
// the number AttrListAt — as JSON in URL-safe base64.
func encodeCursor(lek map[string]types.AttributeValue) (string, error) {
	if len(lek) == 0 {
		return "", nil
	}
	plain := map[string]string{}
	for k, v := range lek {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			plain[k] = v.Value
		case *types.AttributeValueMemberN:
			plain[k] = v.Value
		default:
			return "", fmt.Errorf("state: the index's key %q has type %T", k, v)
		}
	}
	b, err := json.Marshal(plain)
	return base64.RawURLEncoding.EncodeToString(b), err
}

func decodeCursor(c, partition string) (map[string]types.AttributeValue, error) {
	if c == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: cursor %q was not made by List", ErrBadListOptions, c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, bad
	}
	var plain map[string]string
	if err := json.Unmarshal(b, &plain); err != nil || len(plain) != 3 {
		return nil, bad
	}
	lek := map[string]types.AttributeValue{}
	for _, k := range []string{idempotency.AttrID, contract.AttrListKey} {
		if plain[k] == "" {
			return nil, bad
		}
		lek[k] = s(plain[k])
	}
	if plain[contract.AttrListKey] != partition {
		return nil, fmt.Errorf("%w: the cursor continues another listing (%s)", ErrBadListOptions, plain[contract.AttrListKey])
	}
	if _, err := strconv.ParseInt(plain[contract.AttrListAt], 10, 64); err != nil {
		return nil, bad
	}
	lek[contract.AttrListAt] = &types.AttributeValueMemberN{Value: plain[contract.AttrListAt]}
	return lek, nil
}
