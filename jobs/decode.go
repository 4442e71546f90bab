package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"time"
	"unicode/utf8"
	"unsafe"
)

// EnvelopeError reports a message body that is not a job this runtime can read. The runtime
// dead-letters such a message at once with Reason (ReasonMalformed or ReasonVersion).
type EnvelopeError struct {
	Reason string // ReasonMalformed or ReasonVersion
	Err    error
}

// Error describes the failure.
func (e *EnvelopeError) Error() string { return "jobs: envelope " + e.Reason + ": " + errString(e.Err) }

// Unwrap returns Err.
func (e *EnvelopeError) Unwrap() error { return e.Err }

// DeadLetterReason returns Reason: an EnvelopeError is permanent.
func (e *EnvelopeError) DeadLetterReason() string { return e.Reason }

// DecodeEnvelope decodes an SQS message body into an Envelope and checks it: the JSON must be an
// object, v must be EnvelopeVersion, id and kind must be set. Errors are *EnvelopeError.
//
// It accepts exactly what encoding/json accepts (and decodes it to the same values), with a fast
// path for ordinary envelopes; FuzzDecodeEnvelope checks the two agree. Args is a copy: the
// caller may keep or modify it.
func DecodeEnvelope(body string) (Envelope, error) {
	var env Envelope
	if args, ok := decodeEnvelopeFast(body, &env, nil); ok {
		if args != "" {
			env.Args = json.RawMessage(args)
		}
		return env, checkEnvelope(&env, nil)
	}
	env, _, err := decodeEnvelopeSlow(body)
	return env, err
}

// decodeEnvelope is DecodeEnvelope for the runtime: env.Args is left nil and the args are
// returned as a string sharing body's memory (or, from the slow path, memory nothing else
// refers to), so they are never copied. With pd, the args of a kind pd knows are decoded in the
// same pass (see preDecoder).
func decodeEnvelope(body string, env *Envelope, pd *preDecoder) (args string, err error) {
	if args, ok := decodeEnvelopeFast(body, env, pd); ok {
		return args, checkEnvelope(env, nil)
	}
	if pd != nil {
		pd.reset()
	}
	var raw json.RawMessage
	*env, raw, err = decodeEnvelopeSlow(body)
	env.Args = nil
	return stringOf(raw), err
}

// decodeEnvelopeSlow is decodeEnvelope through encoding/json (kept apart so the fast path's
// Envelope stays on the stack).
func decodeEnvelopeSlow(body string) (Envelope, json.RawMessage, error) {
	var env Envelope
	err := json.Unmarshal([]byte(body), &env)
	return env, env.Args, checkEnvelope(&env, err)
}

// decodeEnvelopeReference is the plain encoding/json decoder DecodeEnvelope must agree with.
func decodeEnvelopeReference(body string) (Envelope, error) {
	var env Envelope
	err := json.Unmarshal([]byte(body), &env)
	return env, checkEnvelope(&env, err)
}

func checkEnvelope(env *Envelope, err error) error {
	switch {
	case err != nil:
		if env.V != 0 && env.V != EnvelopeVersion {
			return &EnvelopeError{Reason: ReasonVersion, Err: fmt.Errorf("version %d: %w", env.V, err)}
		}
		return &EnvelopeError{Reason: ReasonMalformed, Err: err}
	case env.V == 0:
		return &EnvelopeError{Reason: ReasonMalformed, Err: errors.New(`no "v" (envelope version)`)}
	case env.V != EnvelopeVersion:
		return &EnvelopeError{Reason: ReasonVersion, Err: fmt.Errorf("version %d, this runtime reads %d", env.V, EnvelopeVersion)}
	case env.ID == "":
		return &EnvelopeError{Reason: ReasonMalformed, Err: errors.New(`empty "id"`)}
	case env.Kind == "":
		return &EnvelopeError{Reason: ReasonMalformed, Err: errors.New(`empty "kind"`)}
	}
	return nil
}

// decodeEnvelopeFast decodes the common shape of an envelope without reflection: strings without
// escapes, v a small integer, known keys spelled exactly. It reports false for anything else
// (including every invalid input), and the caller falls back to encoding/json: so when it reports
// true, the result is exactly what encoding/json would give. Strings share s's memory, and so do
// the args it returns; it does not set env.Args. With pd, args that follow the kind are decoded
// into a job of that kind in the same pass when its worker has an args plan.
func decodeEnvelopeFast(s string, env *Envelope, pd *preDecoder) (args string, _ bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return "", false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return args, skipWS(s, i+1) == len(s)
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return "", false
		}
		key, next, ok := plainString(s, i)
		if !ok {
			return "", false
		}
		i = skipWS(s, next)
		if i >= len(s) || s[i] != ':' {
			return "", false
		}
		i = skipWS(s, i+1)
		switch key {
		case "v":
			n, next, ok := smallInt(s, i)
			if !ok {
				return "", false
			}
			env.V, i = n, next
		case "id", "kind", "key", "trace":
			v, next, ok := plainString(s, i)
			if !ok {
				return "", false
			}
			switch key {
			case "id":
				env.ID = v
			case "kind":
				env.Kind = v
			case "key":
				env.Key = v
			default:
				env.Trace = v
			}
			i = next
		case "enqueued_at":
			v, next, ok := plainString(s, i)
			if !ok {
				return "", false
			}
			var dc *dateCache
			if pd != nil {
				dc = &pd.dates
			}
			t, ok := parseTimeUTC(v, dc)
			if !ok {
				if err := t.UnmarshalJSON(bytesOf(s[i:next])); err != nil {
					return "", false
				}
			}
			env.EnqueuedAt, i = t, next
		case "args":
			end, decoded := 0, false
			if pd != nil {
				// A later "args" replaces an earlier one, as in encoding/json.
				pd.reset()
				if env.Kind != "" {
					end, decoded = pd.decode(env.Kind, s, i)
				}
			}
			if !decoded {
				if end, ok = skipValue(s, i); !ok {
					return "", false
				}
			}
			args = s[i:end]
			i = end
		default:
			// encoding/json matches keys case-insensitively (with Unicode folding): leave
			// near-misses and non-ASCII keys to it.
			for j := 0; j < len(key); j++ {
				if key[j] >= utf8.RuneSelf {
					return "", false
				}
			}
			for _, k := range envelopeKeys {
				if asciiEqualFold(key, k) {
					return "", false
				}
			}
			end, ok := skipValue(s, i)
			if !ok {
				return "", false
			}
			i = end
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return "", false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
		case '}':
			return args, skipWS(s, i+1) == len(s)
		default:
			return "", false
		}
	}
}

var envelopeKeys = [...]string{"v", "id", "kind", "args", "enqueued_at", "key", "trace"}

// bytesOf views a string's bytes without copying; the callee must not modify them.
func bytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// stringOf views bytes as a string without copying; nothing may modify them afterwards.
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseTimeUTC parses the RFC 3339 form producers write, "2006-01-02T15:04:05Z" with an optional
// fraction of a second, exactly as time.Time.UnmarshalJSON does. It reports false for any other
// form (an offset, an invalid date, ...): the caller then uses the standard parser. With dc, a
// date seen just before is not worked out again.
func parseTimeUTC(s string, dc *dateCache) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[len(s)-1] != 'Z' ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	var days int64
	if date := s[:10]; dc != nil && dc.date == date {
		days = dc.days
	} else {
		y1, ok1 := twoDigits(s, 0)
		y2, ok2 := twoDigits(s, 2)
		month, ok3 := twoDigits(s, 5)
		day, ok4 := twoDigits(s, 8)
		year := y1*100 + y2
		if !(ok1 && ok2 && ok3 && ok4) || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
			return time.Time{}, false
		}
		days = daysFromCivil(year, month, day)
		if dc != nil {
			dc.date, dc.days = date, days
		}
	}
	hour, ok1 := twoDigits(s, 11)
	minute, ok2 := twoDigits(s, 14)
	sec, ok3 := twoDigits(s, 17)
	if !(ok1 && ok2 && ok3) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		// A '.' and at least one digit; digits past the ninth are dropped, as time does.
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		scale := 100000000
		for j := 1; j < len(frac); j++ {
			d := frac[j] - '0'
			if d > 9 {
				return time.Time{}, false
			}
			nsec += int(d) * scale
			scale /= 10
		}
	}
	unix := days*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// dateCache remembers the last date parseTimeUTC worked out: the envelopes of a batch were
// mostly enqueued on the same day.
type dateCache struct {
	date string // "2006-01-02"
	days int64  // since 1970-01-01
}

// twoDigits reads two decimal digits at s[i:].
func twoDigits(s string, i int) (int, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	return int(a)*10 + int(b), a <= 9 && b <= 9
}

// daysIn is the number of days in month of year (proleptic Gregorian, as package time counts).
func daysIn(month, year int) int {
	if month == 2 {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + (month+month/8)%2
}

// daysFromCivil returns the days from 1970-01-01 to the given date (proleptic Gregorian).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func skipWS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainString reads the JSON string at s[i] (a '"') when it has no escapes and is valid UTF-8 —
// the cases where its decoded value is its bytes. It returns the value and the index after it.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	j := skipPlain(s, i+1, true)
	ascii := true
	for ; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '"':
			v := s[i+1 : j]
			if !ascii && !utf8.ValidString(v) {
				return "", 0, false
			}
			return v, j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}

// load64 reads s[i:i+8] as a little-endian word (the compiler makes it one load).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// skipPlain returns the index of the first byte from s[j] on that ends or escapes a JSON string
// or is invalid in one — '"', '\\', or below 0x20 — or, with nonASCII, is 0x80 or above; or,
// near the end of s, an index no further than that byte. It reads 8 bytes at a time.
func skipPlain(s string, j int, nonASCII bool) int {
	for j+8 <= len(s) {
		if m := specialBytes(load64(s, j), nonASCII); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	return j
}

// specialBytes marks, with its high bit, each byte of a word of string bytes that skipPlain
// stops at. The lowest mark is exact (a byte marked by mistake only ever follows a marked one).
func specialBytes(w uint64, nonASCII bool) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^'"'*ones, w^'\\'*ones // zero where a byte is '"' or '\\'
	m := (w-0x20*ones)&^w | (q-ones)&^q | (b-ones)&^b
	if nonASCII {
		m |= w
	}
	return m & highs
}

// smallInt reads a JSON number that is a plain non-negative integer below 10^9.
func smallInt(s string, i int) (int, int, bool) {
	j, n := i, 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		if j-i >= 9 {
			return 0, 0, false
		}
		n = n*10 + int(s[j]-'0')
		j++
	}
	if j == i || (s[i] == '0' && j-i > 1) {
		return 0, 0, false
	}
	if j < len(s) && (s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
		return 0, 0, false
	}
	return n, j, true
}

// skipValue validates the JSON value starting at s[i] and returns the index after it. It gives
// up (false) on invalid JSON and on nesting deeper than it tracks.
func skipValue(s string, i int) (int, bool) {
	var stack [64]byte // open containers: '{' or '['
	depth := 0
	for {
		// A value starts at i.
		i = skipWS(s, i)
		if i >= len(s) {
			return 0, false
		}
		switch c := s[i]; c {
		case '{', '[':
			j := skipWS(s, i+1)
			if j < len(s) && ((c == '{' && s[j] == '}') || (c == '[' && s[j] == ']')) {
				i = j + 1
				break
			}
			if depth == len(stack) {
				return 0, false
			}
			stack[depth] = c
			depth++
			i = j
			if c == '{' {
				var ok bool
				if i, ok = objectKey(s, i); !ok {
					return 0, false
				}
			}
			continue
		case '"':
			j, ok := skipString(s, i)
			if !ok {
				return 0, false
			}
			i = j
		case 't':
			if !hasPrefix(s, i, "true") {
				return 0, false
			}
			i += 4
		case 'f':
			if !hasPrefix(s, i, "false") {
				return 0, false
			}
			i += 5
		case 'n':
			if !hasPrefix(s, i, "null") {
				return 0, false
			}
			i += 4
		default:
			j, ok := skipNumber(s, i)
			if !ok {
				return 0, false
			}
			i = j
		}
		// A value ended at i: close containers until one continues.
		for {
			if depth == 0 {
				return i, true
			}
			i = skipWS(s, i)
			if i >= len(s) {
				return 0, false
			}
			top := stack[depth-1]
			if s[i] == ',' {
				i = skipWS(s, i+1)
				if top == '{' {
					var ok bool
					if i, ok = objectKey(s, i); !ok {
						return 0, false
					}
				}
				break
			}
			if (top == '{' && s[i] == '}') || (top == '[' && s[i] == ']') {
				depth--
				i++
				continue
			}
			return 0, false
		}
	}
}

// objectKey reads `"key" :` at s[i] and returns the index after the colon.
func objectKey(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, false
	}
	j, ok := skipString(s, i)
	if !ok {
		return 0, false
	}
	j = skipWS(s, j)
	if j >= len(s) || s[j] != ':' {
		return 0, false
	}
	return j + 1, true
}

// skipString validates the JSON string at s[i] (a '"') and returns the index after it.
func skipString(s string, i int) (int, bool) {
	for j := skipPlain(s, i+1, false); j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			j++
			if j >= len(s) {
				return 0, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) {
					return 0, false
				}
				for k := j + 1; k <= j+4; k++ {
					if !isHex(s[k]) {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		case c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// skipNumber validates the JSON number at s[i] and returns the index after it.
func skipNumber(s string, i int) (int, bool) {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && s[j] >= '1' && s[j] <= '9':
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	default:
		return 0, false
	}
	if j < len(s) && s[j] == '.' {
		j++
		k := j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	return j, true
}

func hasPrefix(s string, i int, p string) bool { return len(s)-i >= len(p) && s[i:i+len(p)] == p }
func isDigit(c byte) bool                      { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// asciiEqualFold reports whether a and b are equal ignoring ASCII case. A non-ASCII byte matches
// only itself; callers send keys with such bytes to encoding/json before asking.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
