package wire

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// This file holds the package's every use of package unsafe: an ArgsPlan writes each decoded
// field at its offset in the job's args, and BytesOf and StringOf view a body without copying it.
// BenchmarkDecodeSQSEventJobs against BenchmarkDecodeSQSEventJobsEncodingJSON (sqsevent_test.go)
// measures what they buy over encoding/json.

// ArgsPlan decodes JSON into a flat struct of scalar fields (strings, bools, integers, floats)
// without encoding/json's reflection. Decode reports false for anything it is not sure it decodes
// exactly as encoding/json would (escaped strings, near-miss keys, type mismatches, invalid JSON);
// the caller then resets the value and uses encoding/json, so results never differ.
// FuzzDecodeArgs (package jobs) checks the two agree.
type ArgsPlan struct {
	fields []argsField
}

type argsField struct {
	name   string
	offset uintptr
	kind   reflect.Kind
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// CompileArgsPlan returns a plan for t, or nil when t is not a struct the plan decodes exactly.
func CompileArgsPlan(t reflect.Type) *ArgsPlan {
	if t.Kind() != reflect.Struct || hasUnmarshaler(t) {
		return nil
	}
	p := &ArgsPlan{}
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedded fields promote: leave them to encoding/json
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			if o == "string" {
				return nil
			}
		}
		if !isValidTag(name) {
			name = ""
		}
		name = cmp.Or(name, f.Name)
		for j := 0; j < len(name); j++ {
			if name[j] >= utf8.RuneSelf {
				return nil
			}
		}
		lower := strings.ToLower(name)
		if seen[lower] {
			return nil // conflicting or fold-equal names: encoding/json's rules apply
		}
		seen[lower] = true
		if hasUnmarshaler(f.Type) {
			return nil
		}
		switch k := f.Type.Kind(); k {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
			p.fields = append(p.fields, argsField{name: name, offset: f.Offset, kind: k})
		default:
			return nil
		}
	}
	return p
}

func hasUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || pt.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// isValidTag is encoding/json's rule for a usable tag name.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// Decode decodes the JSON value s into the struct at ptr, which must point to a value of the type
// the plan was compiled for. String fields share s's memory.
func (p *ArgsPlan) Decode(s string, ptr unsafe.Pointer) bool {
	end, ok := p.DecodeValue(s, skipWS(s, 0), ptr)
	return ok && skipWS(s, end) == len(s)
}

// DecodeValue decodes the JSON value at s[i] (no space before it) into the struct at ptr and
// returns the index after it. String fields share s's memory.
func (p *ArgsPlan) DecodeValue(s string, i int, ptr unsafe.Pointer) (int, bool) {
	if hasPrefix(s, i, "null") {
		return i + 4, true // null into a struct: no change
	}
	if i >= len(s) || s[i] != '{' {
		return 0, false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := plainString(s, i)
		if !ok {
			return 0, false
		}
		i = skipWS(s, next)
		if i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipWS(s, i+1)
		var f *argsField
		for n := range p.fields {
			if p.fields[n].name == key {
				f = &p.fields[n]
				break
			}
		}
		if f == nil {
			for j := 0; j < len(key); j++ {
				if key[j] >= utf8.RuneSelf {
					return 0, false
				}
			}
			for n := range p.fields {
				if asciiEqualFold(key, p.fields[n].name) {
					return 0, false
				}
			}
			if i, ok = skipValue(s, i); !ok {
				return 0, false
			}
		} else if i, ok = f.decode(s, i, ptr); !ok {
			return 0, false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// decode decodes the value at s[i] into the field and returns the index after it.
func (f *argsField) decode(s string, i int, base unsafe.Pointer) (int, bool) {
	if hasPrefix(s, i, "null") {
		return i + 4, true // null into a scalar: no change
	}
	at := unsafe.Add(base, f.offset)
	switch f.kind {
	case reflect.String:
		v, next, ok := plainString(s, i)
		if !ok {
			return 0, false
		}
		*(*string)(at) = v
		return next, true
	case reflect.Bool:
		switch {
		case hasPrefix(s, i, "true"):
			*(*bool)(at) = true
			return i + 4, true
		case hasPrefix(s, i, "false"):
			*(*bool)(at) = false
			return i + 5, true
		}
		return 0, false
	}
	end, ok := skipNumber(s, i)
	if !ok {
		return 0, false
	}
	num := s[i:end]
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		ok = setInt(at, f.kind, num)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		ok = setUint(at, f.kind, num)
	case reflect.Float32, reflect.Float64:
		ok = setFloat(at, f.kind, num)
	default:
		ok = false
	}
	return end, ok
}

// setInt stores the JSON number num in the signed integer of kind k at at, or reports false when
// num is not an integer that fits it.
func setInt(at unsafe.Pointer, k reflect.Kind, num string) bool {
	bits := intBits(k)
	n, ok := SmallDecimal(num)
	if !ok || n < -1<<(bits-1) || n > 1<<(bits-1)-1 {
		var err error
		if n, err = strconv.ParseInt(num, 10, bits); err != nil {
			return false
		}
	}
	switch k {
	case reflect.Int:
		*(*int)(at) = int(n)
	case reflect.Int8:
		*(*int8)(at) = int8(n)
	case reflect.Int16:
		*(*int16)(at) = int16(n)
	case reflect.Int32:
		*(*int32)(at) = int32(n)
	default:
		*(*int64)(at) = n
	}
	return true
}

// setUint stores the JSON number num in the unsigned integer of kind k at at, or reports false
// when num is not an integer that fits it.
func setUint(at unsafe.Pointer, k reflect.Kind, num string) bool {
	n, err := strconv.ParseUint(num, 10, intBits(k))
	if err != nil {
		return false
	}
	switch k {
	case reflect.Uint:
		*(*uint)(at) = uint(n)
	case reflect.Uint8:
		*(*uint8)(at) = uint8(n)
	case reflect.Uint16:
		*(*uint16)(at) = uint16(n)
	case reflect.Uint32:
		*(*uint32)(at) = uint32(n)
	case reflect.Uintptr:
		*(*uintptr)(at) = uintptr(n)
	default:
		*(*uint64)(at) = n
	}
	return true
}

// setFloat stores the JSON number num in the float of kind k at at, or reports false when num is
// out of its range.
func setFloat(at unsafe.Pointer, k reflect.Kind, num string) bool {
	if k == reflect.Float32 {
		n, err := strconv.ParseFloat(num, 32)
		if err != nil {
			return false
		}
		*(*float32)(at) = float32(n)
		return true
	}
	n, ok := exactFloat(num)
	if !ok {
		var err error
		if n, err = strconv.ParseFloat(num, 64); err != nil {
			return false
		}
	}
	*(*float64)(at) = n
	return true
}

// SmallDecimal parses an optional '-' and 1 to 18 decimal digits (no sign, leading '+' or other
// byte): every such number fits an int64, so the result is strconv.ParseInt's. It reports false
// for anything else; the caller then asks strconv.
func SmallDecimal(s string) (int64, bool) {
	neg := s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if neg {
		n = -n
	}
	return n, true
}

// exactFloat parses a JSON number whose value is m × 10^e with m below 10^15 and |e| ≤ 22: the
// float64 of m and of 10^|e| are exact, so one multiplication or division rounds once, correctly
// — the same fast path strconv.ParseFloat takes, and the same result. It reports false for any
// other number; the caller then asks strconv.
func exactFloat(s string) (float64, bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, i+1
	}
	var m uint64
	digits, exp := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if m != 0 || s[i] != '0' {
			digits++
		}
		m = m*10 + uint64(s[i]-'0')
		if digits > 15 {
			return 0, false
		}
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if m != 0 || s[i] != '0' {
				digits++
			}
			m = m*10 + uint64(s[i]-'0')
			exp--
			if digits > 15 {
				return 0, false
			}
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg, i = s[i] == '-', i+1
		}
		e := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if e > 1000 {
				return 0, false
			}
			e = e*10 + int(s[i]-'0')
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) || exp < -22 || exp > 22 {
		return 0, false
	}
	f := float64(m)
	if exp < 0 {
		f /= float64Pow10[-exp]
	} else {
		f *= float64Pow10[exp]
	}
	if neg {
		f = -f
	}
	return f, true
}

var float64Pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

func intBits(k reflect.Kind) int {
	switch k {
	case reflect.Int8, reflect.Uint8:
		return 8
	case reflect.Int16, reflect.Uint16:
		return 16
	case reflect.Int32, reflect.Uint32:
		return 32
	case reflect.Int64, reflect.Uint64:
		return 64
	}
	return strconv.IntSize
}

// BytesOf views a string's bytes without copying; the callee must not modify them.
func BytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// StringOf views bytes as a string without copying; nothing may modify them afterwards.
func StringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
