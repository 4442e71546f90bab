package memddb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Every case runs on the in-memory tables and on DynamoDB Local, and both must answer alike: the
// same outcome (written, cancelled with the same reasons and old images, or refused as invalid)
// and the same items afterwards. DynamoDB Local is what decides; the cases hold what jobkit's
// stores and their users write, and the edges of the language around it.

func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func ss(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }
func ns(v ...string) types.AttributeValue { return &types.AttributeValueMemberNS{Value: v} }
func l(v ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: v}
}
func m(v Item) types.AttributeValue { return &types.AttributeValueMemberM{Value: v} }

// The tables of every case: "a" keyed by pk, "b" by pk and sk (a number).
var seed = []Item{
	{"pk": s("job#1"), "status": s("INPROGRESS"), "lease": n("1732780800123456789"), "count": n("1.50"), "tags": ss("x", "y"), "nums": ns("1", "2")},
	{"pk": s("job#2"), "status": s("COMPLETED"), "doc": m(Item{"a": n("1"), "xs": l(s("p"), s("q"))}), "name": s("hello world")},
}
var seedB = []Item{{"pk": s("acct"), "sk": n("1"), "balance": n("100")}}

type tcase struct {
	name  string
	items []types.TransactWriteItem
}

func put(table string, item Item, cond string, names map[string]string, vals Item) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(table), Item: item, ExpressionAttributeNames: names, ExpressionAttributeValues: vals}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Put: p}
}

func upd(table string, key Item, update, cond string, names map[string]string, vals Item) types.TransactWriteItem {
	u := &types.Update{TableName: aws.String(table), Key: key, UpdateExpression: aws.String(update), ExpressionAttributeNames: names, ExpressionAttributeValues: vals}
	if cond != "" {
		u.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Update: u}
}

func check(table string, key Item, cond string, names map[string]string, vals Item) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: key, ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
}

func del(table string, key Item, cond string, vals Item) types.TransactWriteItem {
	d := &types.Delete{TableName: aws.String(table), Key: key, ExpressionAttributeValues: vals}
	if cond != "" {
		d.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Delete: d}
}

var (
	k1 = Item{"pk": s("job#1")}
	k2 = Item{"pk": s("job#2")}
	k3 = Item{"pk": s("job#3")}
	kb = Item{"pk": s("acct"), "sk": n("1")}
)

var cases = []tcase{
	{"put if absent, absent", []types.TransactWriteItem{put("a", Item{"pk": s("job#3"), "v": n("1")}, "attribute_not_exists(pk)", nil, nil)}},
	{"put if absent, present", []types.TransactWriteItem{put("a", Item{"pk": s("job#1")}, "attribute_not_exists(pk)", nil, nil)}},
	{"claim held: status and lease", []types.TransactWriteItem{upd("a", k1, "SET #s = :done REMOVE lease", "#s = :ip AND lease = :lease", map[string]string{"#s": "status"},
		Item{":done": s("COMPLETED"), ":ip": s("INPROGRESS"), ":lease": n("1732780800123456789")})}},
	{"claim lost: another lease", []types.TransactWriteItem{upd("a", k1, "SET #s = :done", "#s = :ip AND lease = :lease", map[string]string{"#s": "status"},
		Item{":done": s("COMPLETED"), ":ip": s("INPROGRESS"), ":lease": n("1732780800123456788")})}},
	{"counter from nothing", []types.TransactWriteItem{upd("a", k3, "SET c = if_not_exists(c, :zero) + :one", "", nil, Item{":zero": n("0"), ":one": n("1")})}},
	{"decimal arithmetic", []types.TransactWriteItem{upd("a", k1, "SET #c = #c + :a, d = :b - :c", "", map[string]string{"#c": "count"}, Item{":a": n("2.5"), ":b": n("0.1"), ":c": n("0.30")})}},
	{"big numbers", []types.TransactWriteItem{upd("a", k3, "SET big = :x + :y", "", nil, Item{":x": n("99999999999999999999999999999999999999"), ":y": n("-1E+37")})}},
	{"add and delete on sets", []types.TransactWriteItem{upd("a", k1, "ADD tags :t, nums :n, fresh :one DELETE gone :g", "", nil, Item{":t": ss("y", "z"), ":n": ns("3"), ":one": n("7"), ":g": ss("q")})}},
	{"delete a set's last members", []types.TransactWriteItem{upd("a", k1, "DELETE tags :t", "", nil, Item{":t": ss("x", "y")})}},
	{"nested paths", []types.TransactWriteItem{upd("a", k2, "SET doc.a = doc.a + :one, doc.xs[5] = :r, doc.b = list_append(doc.xs, :more)", "", nil,
		Item{":one": n("1"), ":r": s("r"), ":more": l(s("z"))})}},
	{"remove from a list", []types.TransactWriteItem{upd("a", k2, "REMOVE doc.xs[0], doc.a", "", nil, nil)}},
	{"set below a missing map", []types.TransactWriteItem{upd("a", k2, "SET nomap.x = :v", "", nil, Item{":v": n("1")})}},
	{"functions true", []types.TransactWriteItem{check("a", k2, "begins_with(#n, :h) AND contains(#n, :w) AND size(#n) = :len AND attribute_type(doc, :m) AND contains(doc.xs, :p)",
		map[string]string{"#n": "name"}, Item{":h": s("hell"), ":w": s("o w"), ":len": n("11"), ":m": s("M"), ":p": s("p")})}},
	{"functions false", []types.TransactWriteItem{check("a", k2, "begins_with(#n, :h) OR size(doc.xs) > :two OR attribute_type(doc, :s)",
		map[string]string{"#n": "name"}, Item{":h": s("world"), ":two": n("2"), ":s": s("S")})}},
	{"between and in", []types.TransactWriteItem{check("a", k1, "#c BETWEEN :lo AND :hi AND #s IN (:a, :b) AND contains(tags, :x) AND contains(nums, :two)",
		map[string]string{"#c": "count", "#s": "status"}, Item{":lo": n("1"), ":hi": n("1.5"), ":a": s("X"), ":b": s("INPROGRESS"), ":x": s("x"), ":two": n("2.0")})}},
	{"comparisons with a missing attribute", []types.TransactWriteItem{check("a", k1, "nope <> :v AND NOT (nope = :v) AND NOT (nope < :v) AND NOT (#s > :v)", map[string]string{"#s": "status"}, Item{":v": n("1")})}},
	{"invalid: a reserved word", []types.TransactWriteItem{check("a", k1, "status = :v", nil, Item{":v": s("INPROGRESS")})}},
	{"type error: add a string", []types.TransactWriteItem{put("a", Item{"pk": s("job#3")}, "", nil, nil), upd("a", k1, "ADD #c :v", "", map[string]string{"#c": "count"}, Item{":v": s("x")})}},
	{"type error: plus on a set", []types.TransactWriteItem{upd("a", k1, "SET tags = tags + :one", "", nil, Item{":one": n("1")})}},
	{"mixed types compare false", []types.TransactWriteItem{check("a", k1, "#c < :s", map[string]string{"#c": "count"}, Item{":s": s("9")})}},
	{"not equal on a missing item", []types.TransactWriteItem{check("a", k3, "attribute_not_exists(pk) AND v <> :x", nil, Item{":x": n("1")})}},
	{"counter only if it exists, absent", []types.TransactWriteItem{upd("a", k3, "SET c = c + :one", "attribute_exists(c)", nil, Item{":one": n("1")})}},
	{"a failed condition before a key update", []types.TransactWriteItem{upd("a", k1, "SET pk = :v", "attribute_not_exists(pk)", nil, Item{":v": s("x")})}},
	{"list indexes of the old list", []types.TransactWriteItem{upd("a", k2, "REMOVE doc.xs[0], doc.xs[1]", "", nil, nil)}},
	{"set and remove by old index", []types.TransactWriteItem{upd("a", k2, "REMOVE doc.xs[0] SET doc.xs[1] = :v", "", nil, Item{":v": s("V")})}},
	{"appends in index order", []types.TransactWriteItem{upd("a", k2, "SET doc.xs[6] = :b, doc.xs[5] = :a", "", nil, Item{":a": s("A"), ":b": s("B")})}},
	{"arithmetic without spaces", []types.TransactWriteItem{upd("a", k2, "SET v = doc.a-doc.a, w = :a-:b", "", nil, Item{":a": n("5"), ":b": n("2")})}},
	{"plus a function", []types.TransactWriteItem{upd("a", k3, "SET v = :one + if_not_exists(c, :zero)", "", nil, Item{":one": n("1"), ":zero": n("0")})}},
	{"not equal, both missing", []types.TransactWriteItem{check("a", k1, "nope <> nada", nil, nil)}},
	{"size of a number", []types.TransactWriteItem{check("a", k1, "attribute_exists(pk) OR size(#c) > :v", map[string]string{"#c": "count"}, Item{":v": n("0")})}},
	{"size of a number alone", []types.TransactWriteItem{check("a", k1, "size(#c) > :v", map[string]string{"#c": "count"}, Item{":v": n("0")})}},
	{"invalid: a dash in a name", []types.TransactWriteItem{check("a", k1, "my-attr = :v", nil, Item{":v": n("1")})}},
	{"one failing cancels all", []types.TransactWriteItem{
		put("a", Item{"pk": s("job#3"), "v": n("1")}, "", nil, nil),
		upd("b", kb, "SET balance = balance - :amt", "balance >= :amt", nil, Item{":amt": n("150")}),
		del("a", k2, "", nil),
	}},
	{"all hold, all written", []types.TransactWriteItem{
		put("a", Item{"pk": s("job#3"), "v": n("1")}, "", nil, nil),
		upd("b", kb, "SET balance = balance - :amt", "balance >= :amt", nil, Item{":amt": n("40")}),
		del("a", k2, "attribute_exists(doc)", nil),
	}},
	{"old image of a failed check", []types.TransactWriteItem{check("b", kb, "balance > :x", nil, Item{":x": n("100")})}},
	{"invalid: one item twice", []types.TransactWriteItem{put("a", Item{"pk": s("job#1")}, "", nil, nil), del("a", k1, "", nil)}},
	{"invalid: unused value", []types.TransactWriteItem{upd("a", k1, "SET v = :v", "", nil, Item{":v": n("1"), ":w": n("2")})}},
	{"invalid: key attribute", []types.TransactWriteItem{upd("a", k1, "SET pk = :v", "", nil, Item{":v": s("x")})}},
	{"invalid: missing operand", []types.TransactWriteItem{upd("a", k3, "SET v = nope + :one", "", nil, Item{":one": n("1")})}},
	{"invalid: overlapping paths", []types.TransactWriteItem{upd("a", k2, "SET doc.a = :v REMOVE doc", "", nil, Item{":v": n("1")})}},
	{"a key of the wrong type", []types.TransactWriteItem{put("a", Item{"pk": s("job#3")}, "", nil, nil), put("b", Item{"pk": s("acct"), "sk": s("1")}, "", nil, nil)}},
	{"invalid: an empty set", []types.TransactWriteItem{put("a", Item{"pk": s("job#3"), "t": ss()}, "", nil, nil)}},
	{"invalid: a set member twice", []types.TransactWriteItem{upd("a", k1, "ADD tags :t", "", nil, Item{":t": ss("z", "z")})}},
	{"invalid: a boolean has no order", []types.TransactWriteItem{check("a", k1, "#c < :b", map[string]string{"#c": "count"}, Item{":b": &types.AttributeValueMemberBOOL{Value: true}})}},
	{"invalid: begins_with a number", []types.TransactWriteItem{check("a", k2, "begins_with(#n, :one)", map[string]string{"#n": "name"}, Item{":one": n("1")})}},
	{"invalid: between high and low", []types.TransactWriteItem{check("a", k1, "#c BETWEEN :hi AND :lo", map[string]string{"#c": "count"}, Item{":lo": n("1"), ":hi": n("2")})}},
	{"invalid: missing table", []types.TransactWriteItem{put("nope", Item{"pk": s("x")}, "", nil, nil)}},
}

// outcome is what a transaction did, comparable across the two.
type outcome struct {
	Result  string   // ok, cancelled, invalid
	Reasons []string // cancelled: code and old image per item
	Items   []string // the seeded keys and job#3, afterwards
}

func TestTransactionsAgreeWithDynamoDBLocal(t *testing.T) {
	ctx := context.Background()
	client := dynamodb.NewFromConfig(awstest.DynamoDBLocalConfig(t))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b [4]byte
			_, _ = rand.Read(b[:])
			names := map[string]string{"a": "memddb-a-" + hex.EncodeToString(b[:]), "b": "memddb-b-" + hex.EncodeToString(b[:])}
			for _, tb := range []struct{ name, sk string }{{names["a"], ""}, {names["b"], "sk"}} {
				in := &dynamodb.CreateTableInput{TableName: aws.String(tb.name), BillingMode: types.BillingModePayPerRequest,
					AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
					KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}
				if tb.sk != "" {
					in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN})
					in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange})
				}
				_, err := client.CreateTable(ctx, in)
				require.NoError(t, err)
				t.Cleanup(func() {
					_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
				})
			}
			mem := &Tables{}
			require.NoError(t, mem.Define(names["a"], "pk", "S", "", ""))
			require.NoError(t, mem.Define(names["b"], "pk", "S", "sk", "N"))
			for tbl, items := range map[string][]Item{"a": seed, "b": seedB} {
				for _, it := range items {
					_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names[tbl]), Item: it})
					require.NoError(t, err)
					require.NoError(t, mem.Transact([]types.TransactWriteItem{put(names[tbl], clone(it), "", nil, nil)}))
				}
			}
			items := renamed(tc.items, names)

			_, derr := client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: renamed(tc.items, names)})
			want := describe(t, derr, func(table string, key Item) Item {
				out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names[table]), Key: key, ConsistentRead: aws.Bool(true)})
				require.NoError(t, err)
				return out.Item
			})
			got := describe(t, mem.Transact(items), func(table string, key Item) Item { return mem.Get(names[table], key) })
			require.Equal(t, want, got)
		})
	}
}

// renamed copies items onto the case's own tables ("a" and "b" name them in the cases).
func renamed(items []types.TransactWriteItem, names map[string]string) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, len(items))
	name := func(p *string) *string {
		if v, ok := names[aws.ToString(p)]; ok {
			return aws.String(v)
		}
		return p
	}
	for i, it := range items {
		switch {
		case it.Put != nil:
			c := *it.Put
			c.TableName, c.Item = name(c.TableName), clone(c.Item)
			out[i].Put = &c
		case it.Update != nil:
			c := *it.Update
			c.TableName = name(c.TableName)
			out[i].Update = &c
		case it.Delete != nil:
			c := *it.Delete
			c.TableName = name(c.TableName)
			out[i].Delete = &c
		case it.ConditionCheck != nil:
			c := *it.ConditionCheck
			c.TableName = name(c.TableName)
			out[i].ConditionCheck = &c
		}
	}
	return out
}

func describe(t *testing.T, err error, get func(table string, key Item) Item) outcome {
	t.Helper()
	var o outcome
	var tce *types.TransactionCanceledException
	var api smithy.APIError
	switch {
	case err == nil:
		o.Result = "ok"
	case errors.As(err, &tce):
		o.Result = "cancelled"
		for _, r := range tce.CancellationReasons {
			o.Reasons = append(o.Reasons, aws.ToString(r.Code)+" "+show(r.Item))
		}
	case errors.Is(err, ErrValidation), errors.As(err, &api) && (api.ErrorCode() == "ValidationException" || api.ErrorCode() == "ResourceNotFoundException"):
		o.Result = "invalid"
	default:
		t.Fatalf("unexpected error: %v", err)
	}
	for _, k := range []struct {
		table string
		key   Item
	}{{"a", k1}, {"a", k2}, {"a", k3}, {"b", kb}} {
		o.Items = append(o.Items, show(get(k.table, k.key)))
	}
	return o
}

// show writes an item with its sets sorted, so that two items of equal content print alike.
func show(item Item) string {
	if item == nil {
		return "-"
	}
	keys := make([]string, 0, len(item))
	for k := range item {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := "{"
	for _, k := range keys {
		out += k + ":" + showValue(item[k]) + " "
	}
	return out + "}"
}

func showValue(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberM:
		return "M" + show(x.Value)
	case *types.AttributeValueMemberL:
		out := "L["
		for _, e := range x.Value {
			out += showValue(e) + " "
		}
		return out + "]"
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		members := slices.Clone(setMembers(v))
		slices.Sort(members)
		return typeName(v) + fmt.Sprint(members)
	}
	if x, ok := v.(*types.AttributeValueMemberN); ok {
		// DynamoDB Local keeps the scale of a sum ("1.50" + "2.5" is "4.0"); DynamoDB trims
		// trailing zeros from every number it stores (the developer guide's "Number" type), as
		// these tables do (TestNumbersAreStoredTrimmed): numbers are compared by value here.
		r, err := parseNumber(x.Value)
		if err == nil {
			return "N:" + formatNumber(r)
		}
	}
	return typeName(v) + ":" + scalar(v)
}

func TestNumbersAreStoredTrimmed(t *testing.T) {
	var mem Tables
	require.NoError(t, mem.Define("a", "pk", "S", "", ""))
	require.NoError(t, mem.Transact([]types.TransactWriteItem{put("a", Item{"pk": s("x"), "c": n("1.50"), "e": n("1.2E+3"), "s": ns("2.0", "3")}, "", nil, nil)}))
	require.NoError(t, mem.Transact([]types.TransactWriteItem{upd("a", Item{"pk": s("x")}, "SET c = c + :a, d = :b - :c", "", nil, Item{":a": n("2.5"), ":b": n("0.1"), ":c": n("0.30")})}))
	got := mem.Get("a", Item{"pk": s("x")})
	got["c"].(*types.AttributeValueMemberN).Value = "9" // a copy: the table keeps its own
	got = mem.Get("a", Item{"pk": s("x")})
	require.Equal(t, n("4"), got["c"])
	require.Equal(t, n("-0.2"), got["d"])
	require.Equal(t, n("1200"), got["e"])
	require.Equal(t, ns("2", "3"), got["s"])
}
