// Package wire decodes jobkit's envelope and flat job args without reflection, in one pass over
// the message body and without copying it: the runtime's hot path. Every decoder here reports
// false for anything it is not sure it decodes exactly as encoding/json would (escaped strings,
// near-miss keys, type mismatches, invalid JSON), and the caller then uses encoding/json: results
// never differ. The fuzz targets of package jobs (FuzzDecodeEnvelope, FuzzDecodeArgs) check it.
//
// Strings a decoder returns share the input's memory.
package wire

import (
	"math/bits"
	"unicode/utf8"
)

// skipWS returns the index of the first byte from s[i] on that is not JSON white space.
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
//
// It stays one function on purpose: it is the inner loop of every envelope's args and unknown
// members, and split into steps (open a container, a scalar, close containers) it measured ~10%
// slower. It walks nested values with a stack of open containers instead of recursing; the two
// comments mark its two steps.
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
	var ok bool
	if j < len(s) && s[j] == '.' {
		if j, ok = digits(s, j+1); !ok {
			return 0, false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j, ok = digits(s, j); !ok {
			return 0, false
		}
	}
	return j, true
}

// digits reads one or more digits at s[i] and returns the index after them.
func digits(s string, i int) (int, bool) {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j, j > i
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
