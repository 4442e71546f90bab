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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// maxListRounds bounds the queries behind one page: a page whose jobs have mostly moved on since
// their index entry was written (see List) comes back short, with a Next.
const maxListRounds = 8

// List returns a queue's jobs in one state, newest first, a page at a time. It reads the state
// table's index contract.StateIndex (partition "<queue>#<state>", sorted by the time of the
// change: never a scan of the table), and checks each entry as JobStatus would, with one
// BatchGetItem per query for the other half of each job's state (its idempotency record, or its
// job item): an entry a job has moved on from since it was written — a job item that still says
// enqueued or retrying after a run its idempotency record holds — is left out, so the page holds
// the jobs whose state is State now. A page can hold fewer than Limit jobs while Next is set.
//
// Cost per page: one Query of the index per round (a read unit per 4 KB of the entries it
// examines) and one BatchGetItem; the writes that keep the index cost a write unit of the
// index beside each state write (DynamoDB writes an index entry when an item's key attributes
// change).
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
	start, err := decodeCursor(opts.Cursor)
	if err != nil {
		return page, err
	}
	b := expression.NewBuilder().WithKeyCondition(expression.Key(contract.AttrListKey).Equal(
		expression.Value(contract.ListKey(opts.Queue, string(opts.State)))))
	if opts.Kind != "" {
		b = b.WithFilter(expression.Name(attrKind).Equal(expression.Value(opts.Kind)))
	}
	expr, err := b.Build()
	if err != nil {
		return page, err
	}
	seen := map[string]bool{}
	for round := 0; len(page.Jobs) < limit && round < maxListRounds; round++ {
		out, err := t.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(t.name), IndexName: aws.String(contract.StateIndex),
			KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(limit - len(page.Jobs))),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return page, fmt.Errorf("state: list %s jobs of %s: %w", opts.State, opts.Queue, err)
		}
		found, err := t.resolve(ctx, out.Items)
		if err != nil {
			return page, err
		}
		for _, st := range found {
			if st.State == opts.State && !seen[st.ID] {
				seen[st.ID] = true
				page.Jobs = append(page.Jobs, st)
			}
		}
		start = out.LastEvaluatedKey
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

// resolve turns index entries (job items and idempotency records) into the jobs' statuses, as
// JobStatus reads them: it fetches the other half of each job's state in BatchGetItem calls.
func (t *Table) resolve(ctx context.Context, entries []map[string]types.AttributeValue) ([]jobs.JobStatus, error) {
	type half struct {
		item map[string]types.AttributeValue // the entry: a job item or an idempotency record
		rec  *idempotency.Record             // the entry, when it is an idempotency record
		need string                          // the key of the other half; "" when none
	}
	halves := make([]half, 0, len(entries))
	var keys []string
	for _, e := range entries {
		h := half{item: e}
		if id := str(e, idempotency.AttrID); strings.HasPrefix(id, PrefixJob) {
			st := statusOf(strings.TrimPrefix(id, PrefixJob), e)
			if st.State != jobs.StateDead && st.State != jobs.StateCancelled {
				h.need = str(e, attrIdemKey)
			}
		} else {
			rec, err := idempotency.RecordFromItem(e)
			if err != nil || rec.JobID == "" {
				continue // not a job's record: nothing to list
			}
			h.rec, h.need = rec, PrefixJob+rec.JobID
		}
		if h.need != "" {
			keys = append(keys, h.need)
		}
		halves = append(halves, h)
	}
	got, err := t.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	now := t.o.Now()
	out := make([]jobs.JobStatus, 0, len(halves))
	for _, h := range halves {
		var (
			st  jobs.JobStatus
			rec = h.rec
		)
		if rec == nil { // a job item, and maybe its idempotency record
			st = statusOf(strings.TrimPrefix(str(h.item, idempotency.AttrID), PrefixJob), h.item)
			if other := got[h.need]; other != nil {
				rec, _ = idempotency.RecordFromItem(other)
			}
		} else if item := got[h.need]; item != nil { // a record, and its job's item
			st = statusOf(rec.JobID, item)
		} else { // a record of a job sent without a job item
			st = jobs.JobStatus{ID: rec.JobID, Kind: rec.Kind, Queue: rec.Queue, State: jobs.StateEnqueued}
		}
		if rec != nil && rec.JobID != "" {
			merge(&st, rec, now)
		}
		if p := st.Progress; p != nil && (st.State != jobs.StateRunning || p.At.Before(st.Since)) {
			st.Progress = nil
		}
		out = append(out, st)
	}
	return out, nil
}

// batchGet reads items by key, 100 a call (BatchGetItem's most), consistently; missing items are
// absent from the map.
func (t *Table) batchGet(ctx context.Context, keys []string) (map[string]map[string]types.AttributeValue, error) {
	got := map[string]map[string]types.AttributeValue{}
	slices.Sort(keys)
	keys = slices.Compact(keys)
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
				time.Sleep(time.Duration(10<<try) * time.Millisecond)
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

func decodeCursor(c string) (map[string]types.AttributeValue, error) {
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
	if _, err := strconv.ParseInt(plain[contract.AttrListAt], 10, 64); err != nil {
		return nil, bad
	}
	lek[contract.AttrListAt] = &types.AttributeValueMemberN{Value: plain[contract.AttrListAt]}
	return lek, nil
}
