package esm

import (
	"encoding/json"
	"fmt"
	"strings"
)

// EventFilter is an event source mapping's FilterCriteria: a record is handed to the function
// when it matches any of the patterns, and otherwise checkpointed past without an invocation, as
// Lambda's event filtering does ("Control which events Lambda sends to your function").
//
// The patterns are the JSON of AWS::Lambda::EventSourceMapping FilterCriteria.Filters[].Pattern,
// matched against the record as the function receives it (for a stream: eventName, dynamodb.Keys,
// dynamodb.NewImage, ...). Supported: nested objects, lists of values (equality with strings,
// numbers, booleans, null), and the operators prefix, suffix, exists and anything-but. Any other
// operator is a *ConfigError, never a filter that quietly lets everything through.
type EventFilter struct {
	patterns []map[string]any
}

// NewEventFilter parses patterns; none means every record matches.
func NewEventFilter(patterns []string) (*EventFilter, error) {
	f := &EventFilter{}
	for _, p := range patterns {
		var m map[string]any
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			return nil, &ConfigError{Reason: fmt.Sprintf("filter pattern %q is not a JSON object: %v", p, err)}
		}
		if err := checkPattern(m, ""); err != nil {
			return nil, &ConfigError{Reason: fmt.Sprintf("filter pattern %s: %v", p, err)}
		}
		f.patterns = append(f.patterns, m)
	}
	return f, nil
}

// checkPattern reports the first part of a pattern this filter cannot evaluate.
func checkPattern(p map[string]any, path string) error {
	for k, v := range p {
		switch x := v.(type) {
		case map[string]any:
			if err := checkPattern(x, path+"."+k); err != nil {
				return err
			}
		case []any:
			for _, rule := range x {
				op, ok := rule.(map[string]any)
				if !ok {
					continue
				}
				if len(op) != 1 {
					return fmt.Errorf("%s.%s: a rule object has one operator", path, k)
				}
				for name := range op {
					switch name {
					case "prefix", "suffix", "exists", "anything-but":
					default:
						return fmt.Errorf("%s.%s: operator %q is not supported offline", path, k, name)
					}
				}
			}
		default:
			return fmt.Errorf("%s.%s: a pattern's leaves are lists of values", path, k)
		}
	}
	return nil
}

// Empty reports whether the filter has no pattern (every record matches).
func (f *EventFilter) Empty() bool { return f == nil || len(f.patterns) == 0 }

// Match reports whether the record (encoded as JSON, as the function receives it) matches a
// pattern.
func (f *EventFilter) Match(record []byte) bool {
	if f.Empty() {
		return true
	}
	var ev map[string]any
	if err := json.Unmarshal(record, &ev); err != nil {
		return false
	}
	for _, p := range f.patterns {
		if matchObject(p, ev) {
			return true
		}
	}
	return false
}

func matchObject(p, ev map[string]any) bool {
	for k, pv := range p {
		v, present := ev[k]
		switch x := pv.(type) {
		case map[string]any:
			sub, ok := v.(map[string]any)
			if !ok || !matchObject(x, sub) {
				return false
			}
		case []any:
			if !matchRules(x, v, present) {
				return false
			}
		}
	}
	return true
}

// matchRules reports whether a value (a scalar, or a list of scalars any of which may match)
// matches one of the rules.
func matchRules(rules []any, v any, present bool) bool {
	values := []any{v}
	if l, ok := v.([]any); ok {
		values = l
	}
	for _, r := range rules {
		if op, ok := r.(map[string]any); ok {
			if e, isExists := op["exists"]; isExists {
				if e == present {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, val := range values {
			if matchRule(r, val) {
				return true
			}
		}
	}
	return false
}

func matchRule(rule, v any) bool {
	op, ok := rule.(map[string]any)
	if !ok {
		return equalValue(rule, v)
	}
	s, isString := v.(string)
	for name, arg := range op {
		switch name {
		case "prefix":
			p, _ := arg.(string)
			return isString && strings.HasPrefix(s, p)
		case "suffix":
			p, _ := arg.(string)
			return isString && strings.HasSuffix(s, p)
		case "anything-but":
			list, isList := arg.([]any)
			if !isList {
				list = []any{arg}
			}
			for _, x := range list {
				if equalValue(x, v) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// equalValue compares a pattern value with a record value, as JSON values: a DynamoDB number
// is a string in the record ({"N": "5"}), so its pattern is a string too (["5"]).
func equalValue(p, v any) bool { return p == v }
