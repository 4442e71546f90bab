package main

import (
	"context"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// indexUnits counts the write units the state table's global secondary index (contract.StateIndex:
// partition contract.AttrListKey, sort key contract.AttrListAt) is billed for the writes a DynamoDB
// client makes, as on-demand billing counts them: none for a write that leaves an item's index key
// alone (the index projects keys and kind, which a job keeps), one for a write that gives an item
// an index key or takes it away, two for one that changes it (the old entry deleted, the new one
// put). The proxy cannot tell these from one request — a change depends on the item's key before
// — so the client's successful writes are followed item by item; this client must be the only
// writer of the items it counts. A failed request of a batch or transaction is taken as wholly
// refused (a transaction is; a batch's unprocessed items are not told apart).
//
// It also keeps the heat of the writes: the write units each item (by its key) and each index
// partition took, to find the hottest of each — the item or partition that reaches DynamoDB's
// per-partition limit of about 1,000 write units a second first.
type indexUnits struct {
	mu    sync.Mutex
	keys  map[string]string // table/id → the item's index key ("" none)
	units float64
	heat  map[string]float64 // item id → its write units
	parts map[string]float64 // index partition (AttrListKey) → its write units
}

func newIndexUnits() *indexUnits {
	return &indexUnits{keys: map[string]string{}, heat: map[string]float64{}, parts: map[string]float64{}}
}

// hottest returns the write units of the hottest item and of the hottest index partition since
// the last reset, with their keys, and resets the heat.
func (u *indexUnits) hottest() (item string, itemUnits float64, part string, partUnits float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, v := range u.heat {
		if v > itemUnits {
			item, itemUnits = k, v
		}
	}
	for k, v := range u.parts {
		if v > partUnits {
			part, partUnits = k, v
		}
	}
	u.heat, u.parts = map[string]float64{}, map[string]float64{}
	return item, itemUnits, part, partUnits
}

// total returns the units counted so far.
func (u *indexUnits) total() float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.units
}

// option counts the index writes of a client's successful requests.
func (u *indexUnits) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("benchIndexUnits",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				// A write refused by its condition is billed (and heats its item) all the
				// same; only a write that succeeded changes the index.
				u.record(in.Parameters, err == nil)
				return out, md, err
			}), middleware.After)
	})
}

type indexWrite struct {
	table, id string
	units     float64           // the item's own write units (≤ 1 KB: 1, in a transaction 2)
	put       bool              // the whole item replaced (PutItem, Put)
	del       bool              // the item deleted
	check     bool              // a transaction's condition check: no write
	set       map[string]string // index attributes set (by an update or in the put item)
	removed   map[string]bool   // index attributes removed by an update
}

func (u *indexUnits) record(params any, applied bool) {
	var writes []indexWrite
	switch p := params.(type) {
	case *dynamodb.PutItemInput:
		writes = append(writes, putWrite(deref(p.TableName), p.Item))
	case *dynamodb.UpdateItemInput:
		writes = append(writes, updateWrite(deref(p.TableName), p.Key, deref(p.UpdateExpression), p.ExpressionAttributeNames, p.ExpressionAttributeValues))
	case *dynamodb.DeleteItemInput:
		writes = append(writes, indexWrite{table: deref(p.TableName), id: idOf(p.Key), del: true})
	case *dynamodb.BatchWriteItemInput:
		for table, reqs := range p.RequestItems {
			for _, r := range reqs {
				if r.PutRequest != nil {
					writes = append(writes, putWrite(table, r.PutRequest.Item))
				} else if r.DeleteRequest != nil {
					writes = append(writes, indexWrite{table: table, id: idOf(r.DeleteRequest.Key), del: true})
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range p.TransactItems {
			var w indexWrite
			switch {
			case it.Put != nil:
				w = putWrite(deref(it.Put.TableName), it.Put.Item)
			case it.Update != nil:
				w = updateWrite(deref(it.Update.TableName), it.Update.Key, deref(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames, it.Update.ExpressionAttributeValues)
			case it.Delete != nil:
				w = indexWrite{table: deref(it.Delete.TableName), id: idOf(it.Delete.Key), del: true}
			case it.ConditionCheck != nil:
				w = indexWrite{table: deref(it.ConditionCheck.TableName), id: idOf(it.ConditionCheck.Key), check: true}
			}
			w.units = 2
			writes = append(writes, w)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, w := range writes {
		u.heat[w.id] += max(w.units, 1)
		if w.check || !applied {
			continue
		}
		k := w.table + "/" + w.id
		old := u.keys[k]
		lst, at, _ := strings.Cut(old, "\x00")
		switch {
		case w.del:
			lst, at = "", ""
		case w.put:
			lst, at = w.set[contract.AttrListKey], w.set[contract.AttrListAt]
		default:
			if v, ok := w.set[contract.AttrListKey]; ok {
				lst = v
			}
			if v, ok := w.set[contract.AttrListAt]; ok {
				at = v
			}
			if w.removed[contract.AttrListKey] {
				lst = ""
			}
			if w.removed[contract.AttrListAt] {
				at = ""
			}
		}
		now := ""
		if lst != "" && at != "" {
			now = lst + "\x00" + at
		}
		if old != now {
			oldPart, _, _ := strings.Cut(old, "\x00")
			newPart, _, _ := strings.Cut(now, "\x00")
			if old != "" {
				u.units++
				u.parts[oldPart]++ // the old entry deleted
			}
			if now != "" {
				u.units++
				u.parts[newPart]++ // the new one put
			}
		}
		u.keys[k] = now
	}
}

func putWrite(table string, item map[string]types.AttributeValue) indexWrite {
	w := indexWrite{table: table, id: idOf(item), put: true, set: map[string]string{}}
	for _, name := range []string{contract.AttrListKey, contract.AttrListAt} {
		if v, ok := item[name]; ok {
			w.set[name] = scalar(v)
		}
	}
	return w
}

var (
	assignRe = regexp.MustCompile(`([#\w]+)\s*=\s*(:\w+)`)
	clauseRe = regexp.MustCompile(`(?i)\b(SET|REMOVE|ADD|DELETE)\b`)
)

// updateWrite reads which index attributes an update expression sets or removes.
func updateWrite(table string, key map[string]types.AttributeValue, expr string, names map[string]string, values map[string]types.AttributeValue) indexWrite {
	w := indexWrite{table: table, id: idOf(key), set: map[string]string{}, removed: map[string]bool{}}
	name := func(n string) string {
		if r, ok := names[n]; ok {
			return r
		}
		return n
	}
	idx := clauseRe.FindAllStringSubmatchIndex(expr, -1)
	for i, m := range idx {
		end := len(expr)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		body := expr[m[1]:end]
		switch strings.ToUpper(expr[m[2]:m[3]]) {
		case "SET":
			for _, a := range assignRe.FindAllStringSubmatch(body, -1) {
				if n := name(a[1]); n == contract.AttrListKey || n == contract.AttrListAt {
					w.set[n] = scalar(values[a[2]])
				}
			}
		case "REMOVE":
			for _, f := range strings.Split(body, ",") {
				if n := name(strings.TrimSpace(f)); n == contract.AttrListKey || n == contract.AttrListAt {
					w.removed[n] = true
				}
			}
		}
	}
	return w
}

func idOf(item map[string]types.AttributeValue) string { return scalar(item[idempotency.AttrID]) }

func scalar(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
