package faultproxy

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
)

// Sizes DynamoDB bills by: a write request unit covers up to 1 KB of item, a read request unit up
// to 4 KB (strongly consistent; an eventually consistent read costs half).
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
)

// CapacityUnits returns the DynamoDB write and read request units a request to api (e.g.
// "DynamoDB.PutItem") with this JSON body consumes under on-demand billing:
//
//   - PutItem: one write unit per started KB of the item (at least one).
//   - UpdateItem, DeleteItem: one write unit. The item's size after the write is not in the
//     request, so it is taken to be at most 1 KB.
//   - A write whose condition fails consumes its units all the same; so does a cancelled
//     transaction.
//   - TransactWriteItems: two write units per started KB of each item (Put, Update, Delete and
//     ConditionCheck alike; items other than Put taken to be at most 1 KB).
//   - BatchWriteItem: as PutItem and DeleteItem, per request.
//   - GetItem, BatchGetItem (per key): one read unit when ConsistentRead, half otherwise (items
//     up to 4 KB); TransactGetItems: two per item.
//
// Query and Scan depend on what they read; the proxy adds them from the response size. Other
// APIs consume no capacity units.
func CapacityUnits(api string, body []byte) (write, read float64) {
	w, r, _ := requestUnits(api, body)
	return w, r
}

type attrs = map[string]json.RawMessage

// requestUnits returns the capacity units of a DynamoDB request and the number of entries of an
// SQS batch request.
func requestUnits(api string, body []byte) (wcu, rcu float64, entries int) {
	service, op, _ := strings.Cut(api, ".")
	switch service {
	case "SQS":
		if strings.HasSuffix(op, "Batch") {
			var in struct{ Entries []json.RawMessage }
			if json.Unmarshal(body, &in) == nil {
				entries = len(in.Entries)
			}
		}
		return 0, 0, entries
	case "DynamoDB":
	default:
		return 0, 0, 0
	}
	switch op {
	case "PutItem":
		var in struct{ Item attrs }
		_ = json.Unmarshal(body, &in)
		return units(itemSize(in.Item), writeUnitBytes), 0, 0
	case "UpdateItem", "DeleteItem":
		return 1, 0, 0
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct {
				Put *struct{ Item attrs }
			}
		}
		_ = json.Unmarshal(body, &in)
		for _, it := range in.TransactItems {
			size := 0
			if it.Put != nil {
				size = itemSize(it.Put.Item)
			}
			wcu += 2 * units(size, writeUnitBytes)
		}
		return wcu, 0, len(in.TransactItems)
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item attrs }
				DeleteRequest *json.RawMessage
			}
		}
		_ = json.Unmarshal(body, &in)
		for _, reqs := range in.RequestItems {
			for _, r := range reqs {
				size := 0
				if r.PutRequest != nil {
					size = itemSize(r.PutRequest.Item)
				}
				wcu += units(size, writeUnitBytes)
				entries++
			}
		}
		return wcu, 0, entries
	case "GetItem":
		var in struct{ ConsistentRead bool }
		_ = json.Unmarshal(body, &in)
		return 0, readCost(in.ConsistentRead), 0
	case "BatchGetItem":
		var in struct {
			RequestItems map[string]struct {
				Keys           []json.RawMessage
				ConsistentRead bool
			}
		}
		_ = json.Unmarshal(body, &in)
		for _, t := range in.RequestItems {
			rcu += float64(len(t.Keys)) * readCost(t.ConsistentRead)
			entries += len(t.Keys)
		}
		return 0, rcu, entries
	case "TransactGetItems":
		var in struct{ TransactItems []json.RawMessage }
		_ = json.Unmarshal(body, &in)
		return 0, 2 * float64(len(in.TransactItems)), len(in.TransactItems)
	}
	return 0, 0, 0
}

func readCost(consistent bool) float64 {
	if consistent {
		return 1
	}
	return 0.5
}

// units is the number of started blocks of block bytes in size, at least one.
func units(size, block int) float64 {
	return math.Max(1, math.Ceil(float64(size)/float64(block)))
}

// itemSize approximates DynamoDB's item size: attribute name lengths plus value sizes.
func itemSize(item attrs) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize approximates the stored size of one AttributeValue in DynamoDB JSON.
func valueSize(raw json.RawMessage) int {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return len(raw)
	}
	n := 0
	for typ, val := range v {
		switch typ {
		case "S":
			var s string
			_ = json.Unmarshal(val, &s)
			n += len(s)
		case "N":
			var s string
			_ = json.Unmarshal(val, &s)
			n += (len(strings.TrimLeft(s, "-0.")) + 1) / 2
			n++
		case "B":
			var s string
			_ = json.Unmarshal(val, &s)
			b, _ := base64.StdEncoding.DecodeString(s)
			n += len(b)
		case "BOOL", "NULL":
			n++
		case "SS", "NS", "BS":
			var xs []string
			_ = json.Unmarshal(val, &xs)
			for _, x := range xs {
				n += len(x)
			}
		case "L":
			var xs []json.RawMessage
			_ = json.Unmarshal(val, &xs)
			n += 3
			for _, x := range xs {
				n += 1 + valueSize(x)
			}
		case "M":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(val, &m)
			n += 3
			for k, x := range m {
				n += 1 + len(k) + valueSize(x)
			}
		}
	}
	return n
}

// queueName returns the name of the queue an SQS request (JSON protocol) is about, or "".
func queueName(body []byte) string {
	var in struct{ QueueUrl string }
	if json.Unmarshal(body, &in) != nil || in.QueueUrl == "" {
		return ""
	}
	return in.QueueUrl[strings.LastIndexByte(in.QueueUrl, '/')+1:]
}

// countMessages returns the number of messages in a ReceiveMessage answer (JSON protocol).
func countMessages(body []byte) int64 {
	var out struct{ Messages []json.RawMessage }
	if json.Unmarshal(body, &out) != nil {
		return -1
	}
	return int64(len(out.Messages))
}
