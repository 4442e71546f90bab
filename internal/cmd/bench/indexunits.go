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
// writer of the items it counts.
type indexUnits struct {
	mu    sync.Mutex
	keys  map[string]string // table/id → the item's index key ("" none)
	units float64
}

func newIndexUnits() *indexUnits { return &indexUnits{keys: map[string]string{}} }

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
				if err == nil {
					u.record(in.Parameters)
				}
				return out, md, err
			}), middleware.After)
	})
}

type indexWrite struct {
	table, id string
	put       bool              // the whole item replaced (PutItem, Put)
	del       bool              // the item deleted
	set       map[string]string // index attributes set (by an update or in the put item)
	removed   map[string]bool   // index attributes removed by an update
}

func (u *indexUnits) record(params any) {
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
			switch {
			case it.Put != nil:
				writes = append(writes, putWrite(deref(it.Put.TableName), it.Put.Item))
			case it.Update != nil:
				writes = append(writes, updateWrite(deref(it.Update.TableName), it.Update.Key, deref(it.Update.UpdateExpression), it.Update.ExpressionAttributeNames, it.Update.ExpressionAttributeValues))
			case it.Delete != nil:
				writes = append(writes, indexWrite{table: deref(it.Delete.TableName), id: idOf(it.Delete.Key), del: true})
			}
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, w := range writes {
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
		switch {
		case old == now:
		case old == "" || now == "":
			u.units++
		default:
			u.units += 2
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
