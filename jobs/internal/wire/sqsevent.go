package wire

import (
	"encoding/json"
	"sort"

	"github.com/aws/aws-lambda-go/events"
)

// SQSMessage is one record of a Lambda SQS event: the fields of events.SQSMessage, with its two
// maps as slices in the event's order, so a record costs no map. A nil slice is a member that was
// absent; an empty one, an empty object.
type SQSMessage struct {
	MessageID              string
	ReceiptHandle          string
	Body                   string
	MD5OfBody              string
	MD5OfMessageAttributes string
	EventSourceARN         string
	EventSource            string
	AWSRegion              string
	Attributes             []SQSAttribute
	MessageAttributes      []SQSMessageAttribute
}

// SQSAttribute is one of a record's system attributes (ApproximateReceiveCount, MessageGroupId...).
type SQSAttribute struct{ Name, Value string }

// SQSMessageAttribute is one of a record's message attributes.
type SQSMessageAttribute struct {
	Name  string
	Value events.SQSMessageAttribute
}

// Attribute returns the value of the system attribute name, or "".
func (m *SQSMessage) Attribute(name string) string {
	for k := range m.Attributes {
		if a := &m.Attributes[k]; len(a.Name) == len(name) && a.Name == name {
			return a.Value
		}
	}
	return ""
}

// Event returns the record as aws-lambda-go's events.SQSMessage.
func (m *SQSMessage) Event() events.SQSMessage {
	ev := events.SQSMessage{
		MessageId: m.MessageID, ReceiptHandle: m.ReceiptHandle, Body: m.Body,
		Md5OfBody: m.MD5OfBody, Md5OfMessageAttributes: m.MD5OfMessageAttributes,
		EventSourceARN: m.EventSourceARN, EventSource: m.EventSource, AWSRegion: m.AWSRegion,
	}
	if m.Attributes != nil {
		ev.Attributes = make(map[string]string, len(m.Attributes))
		for _, a := range m.Attributes {
			ev.Attributes[a.Name] = a.Value
		}
	}
	if m.MessageAttributes != nil {
		ev.MessageAttributes = make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
		for _, a := range m.MessageAttributes {
			ev.MessageAttributes[a.Name] = a.Value
		}
	}
	return ev
}

// FromEvent returns the records of ev, attributes sorted by name.
func FromEvent(ev *events.SQSEvent) []SQSMessage {
	if ev.Records == nil {
		return nil
	}
	out := make([]SQSMessage, len(ev.Records))
	for i := range ev.Records {
		r := &ev.Records[i]
		m := &out[i]
		*m = SQSMessage{
			MessageID: r.MessageId, ReceiptHandle: r.ReceiptHandle, Body: r.Body,
			MD5OfBody: r.Md5OfBody, MD5OfMessageAttributes: r.Md5OfMessageAttributes,
			EventSourceARN: r.EventSourceARN, EventSource: r.EventSource, AWSRegion: r.AWSRegion,
		}
		if r.Attributes != nil {
			m.Attributes = make([]SQSAttribute, 0, len(r.Attributes))
			for k, v := range r.Attributes {
				m.Attributes = append(m.Attributes, SQSAttribute{Name: k, Value: v})
			}
			sort.Slice(m.Attributes, func(a, b int) bool { return m.Attributes[a].Name < m.Attributes[b].Name })
		}
		if r.MessageAttributes != nil {
			m.MessageAttributes = make([]SQSMessageAttribute, 0, len(r.MessageAttributes))
			for k, v := range r.MessageAttributes {
				m.MessageAttributes = append(m.MessageAttributes, SQSMessageAttribute{Name: k, Value: v})
			}
			sort.Slice(m.MessageAttributes, func(a, b int) bool { return m.MessageAttributes[a].Name < m.MessageAttributes[b].Name })
		}
	}
	return out
}

// DecodeSQSEvent decodes the payload of a Lambda SQS event into its records, as json.Unmarshal
// into events.SQSEvent would (the same records, an error where it errs), without reflection and
// without a map per record in the common case.
//
// The payload is copied once, and the strings of the records view that copy: the caller may
// reuse payload (aws-lambda-go does) while the records live on. Escaped strings — every body that
// holds JSON — are unescaped inside the copy, in place, so a body costs no allocation of its own.
// What the fast path is not sure to decode exactly as encoding/json does (null members, duplicate
// or near-miss keys, invalid UTF-8, lone surrogates, invalid JSON...) it leaves to
// encoding/json.
func DecodeSQSEvent(payload []byte) ([]SQSMessage, error) {
	// make and copy as one statement pair: the compiler then allocates the copy without zeroing it.
	buf := make([]byte, len(payload))
	copy(buf, payload)
	d := sqsDecoder{buf: buf, s: StringOf(buf)}
	if recs, ok := d.event(); ok {
		return recs, nil
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	return FromEvent(&ev), nil
}

// sqsDecoder reads an SQS event from s, a view of buf, which its strings are unescaped into.
type sqsDecoder struct {
	buf   []byte
	s     string
	attrs []SQSAttribute // every record's system attributes, each record a window of it

	// The member order of the first record (indexes in recordKeys), which later records are
	// expected to repeat.
	order    [len(recordKeys)]uint8
	orderLen int
	learned  bool
}

var (
	emptyAttributes        = []SQSAttribute{}
	emptyMessageAttributes = []SQSMessageAttribute{}
	eventKeys              = []string{"Records"}
	recordKeys             = [...]string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
		"attributes", "messageAttributes", "eventSourceARN", "eventSource", "awsRegion"}
	messageAttributeKeys = []string{"stringValue", "binaryValue", "stringListValues", "binaryListValues", "dataType"}
)

// event reads the whole payload: one object, with "Records".
func (d *sqsDecoder) event() ([]SQSMessage, bool) {
	s := d.s
	var recs []SQSMessage
	seen := false
	i, _, ok := d.object(skipWS(s, 0), func(i int) (int, bool) {
		key, j, ok := memberKey(s, i)
		switch {
		case !ok:
			return 0, false
		case key != "Records":
			return skipUnknown(key, s, j, eventKeys)
		case seen:
			return 0, false
		}
		seen = true
		recs, j, ok = d.records(j)
		return j, ok
	})
	return recs, ok && skipWS(s, i) == len(s)
}

// records reads the array of records at s[i].
func (d *sqsDecoder) records(i int) ([]SQSMessage, int, bool) {
	s := d.s
	if i >= len(s) || s[i] != '[' {
		return nil, 0, false
	}
	recs := make([]SQSMessage, 0, 10)
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		return recs, i + 1, true
	}
	if d.attrs == nil {
		d.attrs = make([]SQSAttribute, 0, 64)
	}
	for {
		recs = append(recs, SQSMessage{})
		j, ok := d.record(i, &recs[len(recs)-1])
		if !ok {
			return nil, 0, false
		}
		var more bool
		if i, more, ok = nextMember(s, j, ']'); !ok {
			return nil, 0, false
		}
		if !more {
			return recs, i, true
		}
	}
}

// Record members, by their index in recordKeys.
const (
	keyMessageID = iota
	keyReceiptHandle
	keyBody
	keyMD5OfBody
	keyMD5OfMessageAttributes
	keyAttributes
	keyMessageAttributes
	keyEventSourceARN
	keyEventSource
	keyAWSRegion
	keyUnknown
)

// quotedRecordKeys are recordKeys as they appear in JSON, quotes included.
var quotedRecordKeys = func() []string {
	q := make([]string, len(recordKeys))
	for k, key := range recordKeys {
		q[k] = `"` + key + `"`
	}
	return q
}()

// recordKey returns the index of key in recordKeys, or keyUnknown.
func recordKey(key string) int {
	switch key {
	case "body":
		return keyBody
	case "messageId":
		return keyMessageID
	case "receiptHandle":
		return keyReceiptHandle
	case "md5OfBody":
		return keyMD5OfBody
	case "md5OfMessageAttributes":
		return keyMD5OfMessageAttributes
	case "attributes":
		return keyAttributes
	case "messageAttributes":
		return keyMessageAttributes
	case "eventSourceARN":
		return keyEventSourceARN
	case "eventSource":
		return keyEventSource
	case "awsRegion":
		return keyAWSRegion
	}
	return keyUnknown
}

// record reads one record at s[i] into m. Its members are strings but for the two attribute
// objects; a key seen twice is left to encoding/json.
//
// The records of an event share one member order (Lambda writes every record alike): the first
// record's order is learned, and a later member whose key is the one expected at its position
// is matched with one comparison of its quoted key instead of being read and looked up.
func (d *sqsDecoder) record(i int, m *SQSMessage) (int, bool) {
	s := d.s
	i, empty, ok := openObject(s, i)
	if !ok || empty {
		return i, ok
	}
	learn := !d.learned
	var seen uint16
	for pos := 0; ; pos++ {
		k, j := keyUnknown, 0
		if pos < d.orderLen {
			if q := quotedRecordKeys[d.order[pos]]; hasPrefix(s, i, q) {
				if j = skipWS(s, i+len(q)); j < len(s) && s[j] == ':' {
					k, j = int(d.order[pos]), skipWS(s, j+1)
				}
			}
		}
		var key string
		if k == keyUnknown {
			if key, j, ok = memberKey(s, i); !ok {
				return 0, false
			}
			k = recordKey(key)
		}
		if learn && pos < len(d.order) {
			if k == keyUnknown {
				learn = false // the order of known members only: stop at an unknown one
			} else {
				d.order[pos], d.orderLen = uint8(k), pos+1
			}
		}
		var field *string
		switch k {
		case keyBody:
			field = &m.Body
		case keyMessageID:
			field = &m.MessageID
		case keyReceiptHandle:
			field = &m.ReceiptHandle
		case keyMD5OfBody:
			field = &m.MD5OfBody
		case keyMD5OfMessageAttributes:
			field = &m.MD5OfMessageAttributes
		case keyEventSourceARN:
			field = &m.EventSourceARN
		case keyEventSource:
			field = &m.EventSource
		case keyAWSRegion:
			field = &m.AWSRegion
		case keyAttributes:
			j, ok = d.attributes(j, m)
		case keyMessageAttributes:
			j, ok = d.messageAttributes(j, m)
		default:
			j, ok = skipUnknown(key, s, j, recordKeys[:])
		}
		if k != keyUnknown {
			if bit := uint16(1) << k; seen&bit != 0 {
				return 0, false
			} else {
				seen |= bit
			}
		}
		if field != nil {
			*field, j, ok = d.str(j)
		}
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = nextMember(s, j, '}'); !ok {
			return 0, false
		}
		if !more {
			d.learned = true
			return i, true
		}
	}
}

// attributes reads the object of string attributes at s[i] into m.Attributes.
func (d *sqsDecoder) attributes(i int, m *SQSMessage) (int, bool) {
	start := len(d.attrs)
	i, empty, ok := d.object(i, func(i int) (int, bool) {
		var a SQSAttribute
		var ok bool
		if a.Name, i, ok = d.key(i); !ok {
			return 0, false
		}
		if a.Value, i, ok = d.str(i); !ok {
			return 0, false
		}
		for _, b := range d.attrs[start:] {
			if b.Name == a.Name {
				return 0, false
			}
		}
		d.attrs = append(d.attrs, a)
		return i, true
	})
	switch {
	case !ok:
		return 0, false
	case empty:
		m.Attributes = emptyAttributes
	default:
		m.Attributes = d.attrs[start:len(d.attrs):len(d.attrs)]
	}
	return i, true
}

// messageAttributes reads the object of message attributes at s[i] into m.MessageAttributes.
func (d *sqsDecoder) messageAttributes(i int, m *SQSMessage) (int, bool) {
	var out []SQSMessageAttribute
	i, empty, ok := d.object(i, func(i int) (int, bool) {
		var a SQSMessageAttribute
		var ok bool
		if a.Name, i, ok = d.key(i); !ok {
			return 0, false
		}
		if i, ok = d.messageAttribute(i, &a.Value); !ok {
			return 0, false
		}
		for _, b := range out {
			if b.Name == a.Name {
				return 0, false
			}
		}
		out = append(out, a)
		return i, true
	})
	switch {
	case !ok:
		return 0, false
	case empty:
		m.MessageAttributes = emptyMessageAttributes
	default:
		m.MessageAttributes = out
	}
	return i, true
}

// messageAttribute reads one message attribute's object at s[i] into a.
func (d *sqsDecoder) messageAttribute(i int, a *events.SQSMessageAttribute) (int, bool) {
	s := d.s
	var seen uint8
	i, _, ok := d.object(i, func(i int) (int, bool) {
		key, j, ok := memberKey(s, i)
		if !ok {
			return 0, false
		}
		var bit uint8
		switch key {
		case "stringValue":
			bit = 1 << 0
			var v string
			if v, j, ok = d.str(j); ok {
				a.StringValue = &v
			}
		case "binaryValue":
			bit = 1 << 1
			a.BinaryValue, j, ok = d.base64(j)
		case "stringListValues":
			bit = 1 << 2
			a.StringListValues, j, ok = d.stringList(j)
		case "binaryListValues":
			bit = 1 << 3
			a.BinaryListValues, j, ok = d.binaryList(j)
		case "dataType":
			bit = 1 << 4
			a.DataType, j, ok = d.str(j)
		default:
			j, ok = skipUnknown(key, s, j, messageAttributeKeys)
		}
		if !ok || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		return j, true
	})
	return i, ok
}
