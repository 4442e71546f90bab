package jobs

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// argsPlan decodes JSON into a flat struct of scalar fields (strings, bools, integers, floats)
// without encoding/json's reflection. decode reports false for anything it is not sure it decodes
// exactly as encoding/json would (escaped strings, near-miss keys, type mismatches, invalid JSON);
// the caller then resets the value and uses encoding/json, so results never differ.
// FuzzDecodeArgs checks the two agree.
type argsPlan struct {
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

// compileArgsPlan returns a plan for t, or nil when t is not a struct the plan decodes exactly.
func compileArgsPlan(t reflect.Type) *argsPlan {
	if t.Kind() != reflect.Struct || hasUnmarshaler(t) {
		return nil
	}
	p := &argsPlan{}
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
		if name == "" {
			name = f.Name
		}
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

// decode decodes the JSON value s into the struct at ptr. String fields share s's memory.
func (p *argsPlan) decode(s string, ptr unsafe.Pointer) bool {
	i := skipWS(s, 0)
	if hasPrefix(s, i, "null") {
		return skipWS(s, i+4) == len(s) // null into a struct: no change
	}
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return skipWS(s, i+1) == len(s)
	}
	for {
		key, next, ok := plainString(s, i)
		if !ok {
			return false
		}
		i = skipWS(s, next)
		if i >= len(s) || s[i] != ':' {
			return false
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
					return false
				}
			}
			for n := range p.fields {
				if asciiEqualFold(key, p.fields[n].name) {
					return false
				}
			}
			if i, ok = skipValue(s, i); !ok {
				return false
			}
		} else if i, ok = f.decode(s, i, ptr); !ok {
			return false
		}
		i = skipWS(s, i)
		if i >= len(s) {
			return false
		}
		switch s[i] {
		case ',':
			i = skipWS(s, i+1)
		case '}':
			return skipWS(s, i+1) == len(s)
		default:
			return false
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
		bits := intBits(f.kind)
		n, err := strconv.ParseInt(num, 10, bits)
		if err != nil {
			return 0, false
		}
		switch f.kind {
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
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		bits := intBits(f.kind)
		n, err := strconv.ParseUint(num, 10, bits)
		if err != nil {
			return 0, false
		}
		switch f.kind {
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
	case reflect.Float32:
		n, err := strconv.ParseFloat(num, 32)
		if err != nil {
			return 0, false
		}
		*(*float32)(at) = float32(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, false
		}
		*(*float64)(at) = n
	default:
		return 0, false
	}
	return end, true
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
