// Package memddb holds DynamoDB tables in memory and writes TransactWriteItems to them as
// DynamoDB does: every item's condition is evaluated against the item as it stands, and either
// every write is applied or none is, with a cancellation reason per item. It serves
// idempotency.MemoryStore, so that code registering items with TransactWrite and OnComplete runs
// in tests without DynamoDB and fails there where DynamoDB would refuse it.
//
// What it evaluates is the expression language of condition and update expressions (comparisons,
// BETWEEN, IN, AND, OR, NOT, attribute_exists, attribute_not_exists, attribute_type,
// begins_with, contains, size; SET with + and -, if_not_exists and list_append, REMOVE, ADD,
// DELETE), on document paths with map keys and list indexes. Its tests run every case on DynamoDB
// Local as well and require the same outcome and the same items.
package memddb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type value = types.AttributeValue

// Item is a table's item.
type Item = map[string]types.AttributeValue

// ErrValidation marks a request DynamoDB refuses whole (its ValidationException): nothing is
// evaluated or written.
var ErrValidation = errors.New("ValidationException")

// Tables is a set of tables. The zero value has none; it is safe for concurrent use.
type Tables struct {
	mu     sync.Mutex
	tables map[string]*table
}

type table struct {
	pk, sk         string
	pkType, skType string // S, N or B
	items          map[string]Item
}

// Define creates table name with its partition key attribute and its type (S, N or B) and, when
// sk is not empty, its sort key attribute and type. Defining a table again empties it.
func (t *Tables) Define(name, pk, pkType, sk, skType string) error {
	keyType := func(t string) bool { return t == "S" || t == "N" || t == "B" }
	if pk == "" || !keyType(pkType) || sk != "" && !keyType(skType) {
		return fmt.Errorf("memddb: table %s: key %s (%s), %s (%s): want a partition key, and each key's type S, N or B", name, pk, pkType, sk, skType)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tables == nil {
		t.tables = map[string]*table{}
	}
	t.tables[name] = &table{pk: pk, sk: sk, pkType: pkType, skType: skType, items: map[string]Item{}}
	return nil
}

// Get returns a copy of the item of table name with key, or nil.
func (t *Tables) Get(name string, key Item) Item {
	t.mu.Lock()
	defer t.mu.Unlock()
	tb := t.tables[name]
	if tb == nil {
		return nil
	}
	k, err := tb.key(key, false)
	if err != nil {
		return nil
	}
	return clone(tb.items[k])
}

// Lock holds the tables for a transaction that must also decide something of its own (the
// idempotency record) before it writes: call Prepare, then Commit or drop the plan, then Unlock.
func (t *Tables) Lock()   { t.mu.Lock() }
func (t *Tables) Unlock() { t.mu.Unlock() }

// Plan is a prepared transaction: the items to write once every condition held.
type Plan struct {
	writes []write
}

type write struct {
	tb   *table
	key  string
	item Item // nil to delete
}

// MaxItems is the most items a TransactWriteItems call holds.
const MaxItems = 100

// Prepare evaluates items as one TransactWriteItems call, with t locked (the caller checks their
// number against MaxItems, counting what it adds). It returns an error
// wrapping ErrValidation for a request DynamoDB refuses whole, else the cancellation reasons
// (one per item, Code "None" or "ConditionalCheckFailed", the item's old image when it asked for
// it) and whether all conditions held.
func (t *Tables) Prepare(items []types.TransactWriteItem) (*Plan, []types.CancellationReason, bool, error) {
	plan := &Plan{}
	reasons := make([]types.CancellationReason, len(items))
	seen := map[string]bool{}
	ok := true
	for i, it := range items {
		op, err := t.prepare(it)
		var invalid *itemError
		switch {
		case errors.As(err, &invalid):
			ok = false
			reasons[i] = types.CancellationReason{Code: aws.String("ValidationError"), Message: aws.String(invalid.msg)}
			continue
		case err != nil:
			return nil, nil, false, fmt.Errorf("%w: item %d: %v", ErrValidation, i, err)
		}
		id := op.table + "\x00" + op.key
		if seen[id] {
			return nil, nil, false, fmt.Errorf("%w: transaction request cannot include multiple operations on one item", ErrValidation)
		}
		seen[id] = true
		reasons[i] = types.CancellationReason{Code: aws.String("None")}
		if !op.held {
			ok = false
			reasons[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed")}
			if op.returnOld && op.old != nil {
				reasons[i].Item = clone(op.old)
			}
			continue
		}
		if op.write {
			plan.writes = append(plan.writes, write{tb: op.tb, key: op.key, item: op.item})
		}
	}
	return plan, reasons, ok, nil
}

// Commit applies a prepared plan, with t locked.
func (p *Plan) Commit() {
	for _, w := range p.writes {
		if w.item == nil {
			delete(w.tb.items, w.key)
		} else {
			w.tb.items[w.key] = w.item
		}
	}
}

// Transact runs items as one TransactWriteItems call: an error wrapping ErrValidation, a
// *types.TransactionCanceledException when a condition failed (nothing written), or nil.
func (t *Tables) Transact(items []types.TransactWriteItem) error {
	if len(items) == 0 || len(items) > MaxItems {
		return fmt.Errorf("%w: a transaction holds 1 to %d items, not %d", ErrValidation, MaxItems, len(items))
	}
	t.Lock()
	defer t.Unlock()
	plan, reasons, ok, err := t.Prepare(items)
	if err != nil {
		return err
	}
	if !ok {
		return Cancelled(reasons)
	}
	plan.Commit()
	return nil
}

// Cancelled is DynamoDB's answer to a cancelled transaction.
func Cancelled(reasons []types.CancellationReason) *types.TransactionCanceledException {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return &types.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]"),
		CancellationReasons: reasons,
	}
}

// itemError is an update DynamoDB refuses for its item alone: the transaction is cancelled with
// the reason ValidationError for that item (a key attribute updated). Other invalid updates (an
// operand of the wrong type, a path that cannot be written) refuse the whole call, as DynamoDB
// Local does.
type itemError struct{ msg string }

func (e *itemError) Error() string { return e.msg }

// op is one item of a transaction, evaluated.
type op struct {
	table, key string
	tb         *table
	held       bool // its condition held
	write      bool
	item       Item // the new item (nil: delete)
	old        Item
	returnOld  bool
}

func (t *Tables) prepare(it types.TransactWriteItem) (op, error) {
	var (
		o        op
		key      Item
		condExpr *string
		names    map[string]string
		vals     map[string]value
		rv       types.ReturnValuesOnConditionCheckFailure
		n        int
	)
	if p := it.Put; p != nil {
		if err := validItem(p.Item); err != nil {
			return o, err
		}
		n++
		o.table, key, condExpr, names, vals, rv = aws.ToString(p.TableName), p.Item, p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues, p.ReturnValuesOnConditionCheckFailure
	}
	if u := it.Update; u != nil {
		n++
		o.table, key, condExpr, names, vals, rv = aws.ToString(u.TableName), u.Key, u.ConditionExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues, u.ReturnValuesOnConditionCheckFailure
	}
	if d := it.Delete; d != nil {
		n++
		o.table, key, condExpr, names, vals, rv = aws.ToString(d.TableName), d.Key, d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues, d.ReturnValuesOnConditionCheckFailure
	}
	if c := it.ConditionCheck; c != nil {
		n++
		o.table, key, condExpr, names, vals, rv = aws.ToString(c.TableName), c.Key, c.ConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues, c.ReturnValuesOnConditionCheckFailure
		if c.ConditionExpression == nil {
			return o, errors.New("a ConditionCheck needs a ConditionExpression")
		}
	}
	if n != 1 {
		return o, fmt.Errorf("an item holds exactly one of Put, Update, Delete, ConditionCheck, not %d", n)
	}
	o.tb = t.tables[o.table]
	if o.tb == nil {
		return o, fmt.Errorf("requested resource not found: table %q", o.table)
	}
	k, err := o.tb.key(key, it.Put != nil)
	if err != nil {
		return o, err
	}
	o.key, o.returnOld = k, rv == types.ReturnValuesOnConditionCheckFailureAllOld
	o.old = o.tb.items[k]

	if err := validItem(vals); err != nil {
		return o, err
	}
	used := usage{names: names, vals: vals}
	var c *cond
	if condExpr != nil {
		if c, err = parseCondition(*condExpr, used.names, used.vals); err != nil {
			return o, fmt.Errorf("invalid ConditionExpression: %v", err)
		}
	}
	var acts []action
	if u := it.Update; u != nil {
		if u.UpdateExpression == nil {
			return o, errors.New("an Update needs an UpdateExpression")
		}
		if acts, err = parseUpdate(*u.UpdateExpression, used.names, used.vals); err != nil {
			return o, fmt.Errorf("invalid UpdateExpression: %v", err)
		}
	}
	if err := used.check(strings.Join([]string{aws.ToString(condExpr), updateExpr(it)}, " ")); err != nil {
		return o, err
	}
	if c != nil {
		if o.held, err = c.eval(o.old); err != nil {
			return o, err
		}
	} else {
		o.held = true
	}
	if !o.held {
		return o, nil // DynamoDB answers ConditionalCheckFailed without working out the write
	}
	switch {
	case it.Put != nil:
		o.write, o.item = true, normalized(it.Put.Item)
	case it.Delete != nil:
		o.write = true
	case it.Update != nil:
		o.write = true
		if o.item, err = o.tb.update(o.old, key, acts); err != nil {
			return o, err
		}
		o.item = normalized(o.item)
	}
	return o, nil
}

func updateExpr(it types.TransactWriteItem) string {
	if it.Update != nil {
		return aws.ToString(it.Update.UpdateExpression)
	}
	return ""
}

// usage checks that every expression attribute name and value given is used, as DynamoDB does.
type usage struct {
	names map[string]string
	vals  map[string]value
}

func (u usage) check(exprs string) error {
	toks, err := lex(exprs)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, t := range toks {
		used[t.text] = true
	}
	for n := range u.names {
		if !used[n] {
			return fmt.Errorf("value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", n)
		}
	}
	for v := range u.vals {
		if !used[v] {
			return fmt.Errorf("value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", v)
		}
	}
	return nil
}

// key returns the item's key as a map key; whole allows attributes beyond the key (a Put's item).
func (tb *table) key(item Item, whole bool) (string, error) {
	names := []string{tb.pk}
	if tb.sk != "" {
		names = append(names, tb.sk)
	}
	if !whole && len(item) != len(names) {
		return "", errors.New("the provided key element does not match the schema")
	}
	var b strings.Builder
	for i, n := range names {
		v, ok := item[n]
		if !ok {
			return "", fmt.Errorf("the provided key element does not match the schema: missing %s", n)
		}
		if want := []string{tb.pkType, tb.skType}[i]; typeName(v) != want {
			return "", &itemError{fmt.Sprintf("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", n, want, typeName(v))}
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				return "", fmt.Errorf("one or more parameter values are not valid: the AttributeValue for a key attribute cannot contain an empty string value: %s", n)
			}
			b.WriteString("S" + v.Value)
		case *types.AttributeValueMemberN:
			num, err := parseNumber(v.Value)
			if err != nil {
				return "", err
			}
			b.WriteString("N" + formatNumber(num))
		case *types.AttributeValueMemberB:
			b.WriteString("B" + string(v.Value))
		default:
			return "", fmt.Errorf("the provided key element does not match the schema: %s", n)
		}
		b.WriteByte(0)
	}
	return b.String(), nil
}

// update applies an update expression's actions to a copy of old (or to a new item of key).
func (tb *table) update(old, key Item, acts []action) (Item, error) {
	item := clone(old)
	if item == nil {
		item = clone(key)
	}
	for _, a := range acts {
		if a.path[0].name == tb.pk || a.path[0].name == tb.sk {
			return nil, &itemError{fmt.Sprintf("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", a.path[0].name)}
		}
	}
	// Every value is computed from the item as it was before the update.
	vals := make([]value, len(acts))
	for i, a := range acts {
		if a.kind != "SET" {
			continue
		}
		v, ok, err := a.val.eval(old)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errors.New("the provided expression refers to an attribute that does not exist in the item")
		}
		vals[i] = cloneValue(v)
	}
	// Every list index names an element of the list as it was: SETs go first, a list's indexes
	// in increasing order (so appends keep their order), then REMOVEs, a list's indexes in
	// decreasing order (so each removal leaves the others' positions alone), then ADD and DELETE.
	order := make([]int, len(acts))
	for i := range order {
		order[i] = i
	}
	rank := map[string]int{"SET": 0, "REMOVE": 1, "ADD": 2, "DELETE": 3}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := acts[i], acts[j]
		if r := rank[a.kind] - rank[b.kind]; r != 0 {
			return r
		}
		if ai, bi, ok := sameList(a.path, b.path); ok {
			if a.kind == "REMOVE" {
				return bi - ai
			}
			return ai - bi
		}
		return 0
	})
	for _, i := range order {
		a := acts[i]
		var err error
		switch a.kind {
		case "SET":
			err = setPath(item, a.path, vals[i])
		case "REMOVE":
			err = removePath(item, a.path)
		case "ADD":
			err = addPath(item, a.path, *a.val.value)
		case "DELETE":
			err = deletePath(item, a.path, *a.val.value)
		}
		if err != nil {
			return nil, err
		}
	}
	return item, nil
}

// sameList reports whether two paths end in indexes of one list, and the indexes.
func sameList(a, b path) (int, int, bool) {
	if len(a) != len(b) || a[len(a)-1].name != "" || b[len(b)-1].name != "" {
		return 0, 0, false
	}
	for k := range len(a) - 1 {
		if a[k] != b[k] {
			return 0, 0, false
		}
	}
	return a[len(a)-1].index, b[len(b)-1].index, true
}

// validItem refuses the values DynamoDB refuses in an item or as a placeholder: empty sets, sets
// with a member twice, numbers it cannot read.
func validItem(item Item) error {
	for _, v := range item {
		if err := validValue(v); err != nil {
			return err
		}
	}
	return nil
}

func validValue(v value) error {
	switch x := v.(type) {
	case *types.AttributeValueMemberN:
		_, err := parseNumber(x.Value)
		return err
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		if x, ok := x.(*types.AttributeValueMemberNS); ok {
			for _, m := range x.Value {
				if _, err := parseNumber(m); err != nil {
					return err
				}
			}
		}
		members := setMembers(v)
		if len(members) == 0 {
			return fmt.Errorf("one or more parameter values were invalid: an %s set may not be empty", typeName(v))
		}
		seen := map[string]bool{}
		for _, m := range members {
			if seen[m] {
				return errors.New("one or more parameter values were invalid: input collection contains duplicates")
			}
			seen[m] = true
		}
	case *types.AttributeValueMemberM:
		return validItem(x.Value)
	case *types.AttributeValueMemberL:
		for _, e := range x.Value {
			if err := validValue(e); err != nil {
				return err
			}
		}
	}
	return nil
}
