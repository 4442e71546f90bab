package wire

import (
	"time"
)

// Header is an envelope's members other than its args, as DecodeHeader reads them: the fields of
// jobs.Envelope but Args.
type Header struct {
	V          int
	ID         string
	Kind       string
	EnqueuedAt time.Time
	Key        string
	Trace      string
	Batch      string
}

// ArgsFunc decodes an envelope's args in the same pass as its header. DecodeHeader calls it for
// each "args" member with the kind read so far ("" when "args" comes first) and the index of the
// value in s; it returns the index after the value and true when it decoded (and so validated)
// the value, or false to leave the value to DecodeHeader. A later "args" replaces an earlier one,
// as in encoding/json: the function forgets what it decoded before.
type ArgsFunc func(kind, s string, i int) (end int, decoded bool)

// DecodeHeader decodes the common shape of an envelope without reflection: strings without
// escapes, v a small integer, known keys spelled exactly. It reports false for anything else
// (including every invalid input), and the caller falls back to encoding/json: so when it reports
// true, the result is exactly what encoding/json would give. Strings share s's memory, and so do
// the args it returns. With dates, a date of enqueued_at seen just before is not worked out
// again; with onArgs, the args are decoded in the same pass (see ArgsFunc).
//
// It reads the members an envelope has in line, one case each, and leaves only unknown keys to a
// call: it runs for every message, and moving the time or the version to calls of their own
// measured 1-3% slower.
func DecodeHeader(s string, h *Header, dates *DateCache, onArgs ArgsFunc) (args string, _ bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return "", false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return "", skipWS(s, i+1) == len(s)
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
			if h.V, i, ok = smallInt(s, i); !ok {
				return "", false
			}
		case "args":
			end, decoded := 0, false
			if onArgs != nil {
				end, decoded = onArgs(h.Kind, s, i)
			}
			if !decoded {
				if end, ok = skipValue(s, i); !ok {
					return "", false
				}
			}
			args, i = s[i:end], end
		case "id", "kind", "key", "trace", "batch":
			// The strings, in line: most of an envelope's members.
			v, next, ok := plainString(s, i)
			if !ok {
				return "", false
			}
			switch key {
			case "id":
				h.ID = v
			case "kind":
				h.Kind = v
			case "key":
				h.Key = v
			case "batch":
				h.Batch = v
			default:
				h.Trace = v
			}
			i = next
		case "enqueued_at":
			v, next, ok := plainString(s, i)
			if !ok {
				return "", false
			}
			t, ok := parseTimeUTC(v, dates)
			if !ok {
				if err := t.UnmarshalJSON(BytesOf(s[i:next])); err != nil {
					return "", false
				}
			}
			h.EnqueuedAt, i = t, next
		default:
			if i, ok = skipUnknown(key, s, i, envelopeKeys[:]); !ok {
				return "", false
			}
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

var envelopeKeys = [...]string{"v", "id", "kind", "args", "enqueued_at", "key", "trace", "batch"}
