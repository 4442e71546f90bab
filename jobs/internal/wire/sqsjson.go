package wire

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON the SQS event decoder reads below a record: strings (unescaped in place), base64,
// arrays and objects, and the skipping of members it does not know.

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
