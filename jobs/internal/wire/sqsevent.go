package wire

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"sort"
	"unicode/utf16"
	"unicode/utf8"

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

// base64 reads a string at s[i] holding base64, decoded as encoding/json decodes a []byte.
func (d *sqsDecoder) base64(i int) ([]byte, int, bool) {
	v, i, ok := d.str(i)
	if !ok {
		return nil, 0, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
	n, err := base64.StdEncoding.Decode(b, BytesOf(v))
	if err != nil {
		return nil, 0, false
	}
	return b[:n], i, true
}

// stringList reads an array of strings at s[i].
func (d *sqsDecoder) stringList(i int) ([]string, int, bool) {
	out := []string{}
	i, ok := d.array(i, func(i int) (int, bool) {
		v, i, ok := d.str(i)
		out = append(out, v)
		return i, ok
	})
	return out, i, ok
}

// binaryList reads an array of base64 strings at s[i].
func (d *sqsDecoder) binaryList(i int) ([][]byte, int, bool) {
	out := [][]byte{}
	i, ok := d.array(i, func(i int) (int, bool) {
		v, i, ok := d.base64(i)
		out = append(out, v)
		return i, ok
	})
	return out, i, ok
}

// array reads the array at s[i], each element with elem.
func (d *sqsDecoder) array(i int, elem func(i int) (int, bool)) (int, bool) {
	s := d.s
	if i >= len(s) || s[i] != '[' {
		return 0, false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	for {
		j, ok := elem(i)
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = nextMember(s, j, ']'); !ok {
			return 0, false
		}
		if !more {
			return i, true
		}
	}
}

// object reads the object at s[i], each member with member, which gets the index of the member's
// key and returns the index after its value. It returns the index after the object, and whether
// the object was empty.
func (d *sqsDecoder) object(i int, member func(i int) (int, bool)) (next int, empty, ok bool) {
	s := d.s
	if i, empty, ok = openObject(s, i); !ok || empty {
		return i, empty, ok
	}
	for {
		j, ok := member(i)
		if !ok {
			return 0, false, false
		}
		var more bool
		if i, more, ok = nextMember(s, j, '}'); !ok {
			return 0, false, false
		}
		if !more {
			return i, false, true
		}
	}
}

// key reads `"name" :` at s[i], a name that may hold escapes (an attribute's), and returns the
// name and the index of its value.
func (d *sqsDecoder) key(i int) (string, int, bool) {
	s := d.s
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	name, i, ok := d.str(i)
	if !ok {
		return "", 0, false
	}
	if i = skipWS(s, i); i >= len(s) || s[i] != ':' {
		return "", 0, false
	}
	return name, skipWS(s, i+1), true
}

// str reads the JSON string at s[i] and returns its value and the index after it. A string
// without escapes is a view of its bytes; one with escapes is unescaped in place (see unescape).
// It reports false for what encoding/json would not decode to the same bytes: invalid UTF-8, a
// lone surrogate, and invalid strings.
func (d *sqsDecoder) str(i int) (string, int, bool) {
	s := d.s
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	start, ascii := i+1, true
	for j := skipPlain(s, start, true); j < len(s); j = skipPlain(s, j, ascii) {
		switch c := s[j]; {
		case c == '"':
			v := s[start:j]
			if !ascii && !utf8.ValidString(v) {
				return "", 0, false
			}
			return v, j + 1, true
		case c == '\\':
			return d.unescape(start, j, ascii)
		case c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
			j++
		default:
			j++
		}
	}
	return "", 0, false
}

// unescape finishes reading a string whose value starts at s[start] and whose first escape is at
// s[j]: it writes the value into buf from start on, over the string's own bytes (a value is never
// longer than its JSON), and returns it as a view of buf. Plain bytes move 8 at a time: a word is
// stored whole when it cannot reach a byte not yet read (w+8 <= the first unread index), so a
// body of JSON, whose quotes are all escaped, costs no copy call per run between them.
func (d *sqsDecoder) unescape(start, j int, ascii bool) (string, int, bool) {
	s, buf := d.s, d.buf
	w := j
	for {
		for j+8 <= len(s) {
			x := load64(s, j)
			m := specialBytes(x, ascii)
			if m == 0 {
				binary.LittleEndian.PutUint64(buf[w:], x) // w+8 <= j+8: nothing unread is overwritten
				w, j = w+8, j+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			if w+8 <= j+k {
				binary.LittleEndian.PutUint64(buf[w:], x)
			} else {
				copy(buf[w:w+k], s[j:j+k])
			}
			w, j = w+k, j+k
			break
		}
		if j >= len(s) {
			return "", 0, false
		}
		switch c := s[j]; {
		case c == '"':
			v := StringOf(buf[start:w])
			if !ascii && !utf8.ValidString(v) {
				return "", 0, false
			}
			return v, j + 1, true
		case c == '\\':
			if j+1 >= len(s) {
				return "", 0, false
			}
			if e := unescapes[s[j+1]]; e != 0 {
				buf[w] = e
				w, j = w+1, j+2
				continue
			}
			if s[j+1] != 'u' {
				return "", 0, false
			}
			j += 2
			r, ok := hex4(s, j)
			if !ok {
				return "", 0, false
			}
			j += 4
			if utf16.IsSurrogate(r) {
				if j+6 > len(s) || s[j] != '\\' || s[j+1] != 'u' {
					return "", 0, false
				}
				r2, ok := hex4(s, j+2)
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return "", 0, false
				}
				j += 6
			}
			w += utf8.EncodeRune(buf[w:], r)
		case c < 0x20:
			return "", 0, false
		default: // a byte of 0x80 or above, or a plain one among the last 7
			if c >= utf8.RuneSelf {
				ascii = false
			}
			buf[w] = c
			w, j = w+1, j+1
		}
	}
}

// unescapes maps the byte after a backslash to the byte its escape stands for, or 0 (a \u
// escape, or an invalid one).
var unescapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads the 4 hex digits of a \u escape at s[i].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case isDigit(c):
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// openObject reads '{' at s[i]: it returns the index of the first key, or with empty the index
// after a '}' that closes the object at once.
func openObject(s string, i int) (next int, empty, ok bool) {
	if i >= len(s) || s[i] != '{' {
		return 0, false, false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true, true
	}
	return i, false, true
}

// memberKey reads `"key" :` at s[i], a key without escapes, and returns the key and the index of
// its value.
func memberKey(s string, i int) (string, int, bool) {
	key, j, ok := plainString(s, i)
	if !ok {
		return "", 0, false
	}
	if j = skipWS(s, j); j >= len(s) || s[j] != ':' {
		return "", 0, false
	}
	return key, skipWS(s, j+1), true
}

// nextMember reads what follows a member or element at s[i]: a ',' (more, and the index of the
// next one) or the closing byte (the index after it).
func nextMember(s string, i int, closing byte) (next int, more, ok bool) {
	i = skipWS(s, i)
	if i >= len(s) {
		return 0, false, false
	}
	switch s[i] {
	case ',':
		return skipWS(s, i+1), true, true
	case closing:
		return i + 1, false, true
	}
	return 0, false, false
}

// skipUnknown skips the value at s[i] of key, which is none of known; a key encoding/json would
// match to one of them (it folds case, Unicode included) is left to it.
func skipUnknown(key, s string, i int, known []string) (int, bool) {
	for j := 0; j < len(key); j++ {
		if key[j] >= utf8.RuneSelf {
			return 0, false
		}
	}
	for _, k := range known {
		if asciiEqualFold(key, k) {
			return 0, false
		}
	}
	return skipValue(s, i)
}
