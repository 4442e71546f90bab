package memddb

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// eval evaluates a condition against item (nil: no item).
func (c *cond) eval(item Item) (bool, error) {
	switch c.op {
	case "AND", "OR":
		l, err := c.subs[0].eval(item)
		if err != nil {
			return false, err
		}
		r, err := c.subs[1].eval(item)
		if err != nil {
			return false, err
		}
		if c.op == "AND" {
			return l && r, nil
		}
		return l || r, nil
	case "NOT":
		v, err := c.subs[0].eval(item)
		return !v, err
	case "attribute_exists", "attribute_not_exists":
		_, ok := resolve(item, c.args[0].path)
		return ok == (c.op == "attribute_exists"), nil
	}
	vals := make([]value, len(c.args))
	have := make([]bool, len(c.args))
	for i, a := range c.args {
		v, ok, err := a.eval(item)
		if err != nil {
			return false, err
		}
		vals[i], have[i] = v, ok
	}
	switch c.op {
	case "attribute_type":
		t, ok := vals[1].(*types.AttributeValueMemberS)
		if !ok || !validType[t.Value] {
			return false, fmt.Errorf("invalid type for attribute_type: %v", vals[1])
		}
		return have[0] && typeName(vals[0]) == t.Value, nil
	case "begins_with":
		if !have[0] || !have[1] {
			return false, nil
		}
		switch p := vals[1].(type) {
		case *types.AttributeValueMemberS:
			s, ok := vals[0].(*types.AttributeValueMemberS)
			return ok && strings.HasPrefix(s.Value, p.Value), nil
		case *types.AttributeValueMemberB:
			b, ok := vals[0].(*types.AttributeValueMemberB)
			return ok && bytes.HasPrefix(b.Value, p.Value), nil
		}
		return false, fmt.Errorf("incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", typeName(vals[1]))
	case "contains":
		if !have[0] || !have[1] {
			return false, nil
		}
		return contains(vals[0], vals[1]), nil
	case "=", "<>":
		eq := have[0] && have[1] && equal(vals[0], vals[1])
		if c.op == "<>" {
			return !eq, nil // NOT =: a missing operand equals nothing, so differs from all
		}
		return eq, nil
	case "<", "<=", ">", ">=":
		if !have[0] || !have[1] {
			return false, nil
		}
		n, ok, err := order(vals[0], vals[1])
		if err != nil || !ok {
			return false, err
		}
		switch c.op {
		case "<":
			return n < 0, nil
		case "<=":
			return n <= 0, nil
		case ">":
			return n > 0, nil
		}
		return n >= 0, nil
	case "BETWEEN":
		if !have[0] || !have[1] || !have[2] {
			return false, nil
		}
		lo, ok1, err := order(vals[1], vals[0])
		if err != nil {
			return false, err
		}
		hi, ok2, err := order(vals[0], vals[2])
		if err != nil {
			return false, err
		}
		return ok1 && ok2 && lo <= 0 && hi <= 0, nil
	case "IN":
		for i := 1; i < len(vals); i++ {
			if have[0] && have[i] && equal(vals[0], vals[i]) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("unknown operator %s", c.op)
}

var validType = map[string]bool{"S": true, "SS": true, "N": true, "NS": true, "B": true, "BS": true, "BOOL": true, "NULL": true, "L": true, "M": true}

// eval computes an operand's value; ok is false for a path the item lacks.
func (o operand) eval(item Item) (value, bool, error) {
	switch {
	case o.value != nil:
		return *o.value, true, nil
	case o.path != nil:
		v, ok := resolve(item, o.path)
		return v, ok, nil
	}
	args := make([]value, len(o.args))
	have := make([]bool, len(o.args))
	for i, a := range o.args {
		v, ok, err := a.eval(item)
		if err != nil {
			return nil, false, err
		}
		args[i], have[i] = v, ok
	}
	switch o.fn {
	case "size":
		if !have[0] {
			return nil, false, nil
		}
		var n int
		switch v := args[0].(type) {
		case *types.AttributeValueMemberS:
			n = utf8.RuneCountInString(v.Value)
		case *types.AttributeValueMemberB:
			n = len(v.Value)
		case *types.AttributeValueMemberSS:
			n = len(v.Value)
		case *types.AttributeValueMemberNS:
			n = len(v.Value)
		case *types.AttributeValueMemberBS:
			n = len(v.Value)
		case *types.AttributeValueMemberL:
			n = len(v.Value)
		case *types.AttributeValueMemberM:
			n = len(v.Value)
		default:
			return nil, false, nil // a value without a size: the comparison is false
		}
		return &types.AttributeValueMemberN{Value: fmt.Sprint(n)}, true, nil
	case "if_not_exists":
		if have[0] {
			return args[0], true, nil
		}
		return args[1], have[1], nil
	case "list_append":
		if !have[0] || !have[1] {
			return nil, false, nil
		}
		a, ok1 := args[0].(*types.AttributeValueMemberL)
		b, ok2 := args[1].(*types.AttributeValueMemberL)
		if !ok1 || !ok2 {
			return nil, false, errors.New("an operand in the update expression has an incorrect data type (list_append)")
		}
		return &types.AttributeValueMemberL{Value: append(slices.Clone(a.Value), b.Value...)}, true, nil
	case "+", "-":
		if !have[0] || !have[1] {
			return nil, false, nil
		}
		a, ok1 := args[0].(*types.AttributeValueMemberN)
		b, ok2 := args[1].(*types.AttributeValueMemberN)
		if !ok1 || !ok2 {
			return nil, false, fmt.Errorf("an operand in the update expression has an incorrect data type (%s)", o.fn)
		}
		x, err := parseNumber(a.Value)
		if err != nil {
			return nil, false, err
		}
		y, err := parseNumber(b.Value)
		if err != nil {
			return nil, false, err
		}
		if o.fn == "+" {
			x.Add(x, y)
		} else {
			x.Sub(x, y)
		}
		return &types.AttributeValueMemberN{Value: formatNumber(x)}, true, nil
	}
	return nil, false, fmt.Errorf("unknown function %s", o.fn)
}

// resolve finds a path's value in item.
func resolve(item Item, p path) (value, bool) {
	var cur value = &types.AttributeValueMemberM{Value: item}
	for _, s := range p {
		switch c := cur.(type) {
		case *types.AttributeValueMemberM:
			if s.name == "" {
				return nil, false
			}
			v, ok := c.Value[s.name]
			if !ok {
				return nil, false
			}
			cur = v
		case *types.AttributeValueMemberL:
			if s.name != "" || s.index >= len(c.Value) {
				return nil, false
			}
			cur = c.Value[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

// parent returns the map or list that holds a path's last step.
func parent(item Item, p path) (value, error) {
	var cur value = &types.AttributeValueMemberM{Value: item}
	if len(p) > 1 {
		v, ok := resolve(item, p[:len(p)-1])
		if !ok {
			return nil, errors.New("the document path provided in the update expression is invalid for update")
		}
		cur = v
	}
	last := p[len(p)-1]
	switch cur.(type) {
	case *types.AttributeValueMemberM:
		if last.name != "" {
			return cur, nil
		}
	case *types.AttributeValueMemberL:
		if last.name == "" {
			return cur, nil
		}
	}
	return nil, errors.New("the document path provided in the update expression is invalid for update")
}

// setPath sets the attribute at p to v.
func setPath(item Item, p path, v value) error {
	par, last, err := parentOf(item, p)
	if err != nil {
		return err
	}
	switch c := par.(type) {
	case *types.AttributeValueMemberM:
		c.Value[last.name] = v
	case *types.AttributeValueMemberL:
		if last.index >= len(c.Value) {
			c.Value = append(c.Value, v)
		} else {
			c.Value[last.index] = v
		}
	}
	return nil
}

// removePath removes the attribute at p, if there is one.
func removePath(item Item, p path) error {
	par, last, err := parentOf(item, p)
	if err != nil {
		return err
	}
	switch c := par.(type) {
	case *types.AttributeValueMemberM:
		delete(c.Value, last.name)
	case *types.AttributeValueMemberL:
		if last.index < len(c.Value) {
			c.Value = slices.Delete(c.Value, last.index, last.index+1)
		}
	}
	return nil
}

// parentOf returns the map or list that holds the attribute at p, and p's last step.
func parentOf(item Item, p path) (value, pathStep, error) {
	par, err := parent(item, p)
	if err != nil {
		return nil, pathStep{}, err
	}
	return par, p[len(p)-1], nil
}

func addPath(item Item, p path, v value) error {
	cur, ok := resolve(item, p)
	if !ok {
		switch v.(type) {
		case *types.AttributeValueMemberN, *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
			return setPath(item, p, cloneValue(v))
		}
		return fmt.Errorf("an operand in the update expression has an incorrect data type (ADD %s)", typeName(v))
	}
	switch a := cur.(type) {
	case *types.AttributeValueMemberN:
		b, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			break
		}
		x, err := parseNumber(a.Value)
		if err != nil {
			return err
		}
		y, err := parseNumber(b.Value)
		if err != nil {
			return err
		}
		return setPath(item, p, &types.AttributeValueMemberN{Value: formatNumber(x.Add(x, y))})
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		if typeName(cur) != typeName(v) {
			break
		}
		return setPath(item, p, setUnion(cur, v))
	}
	return fmt.Errorf("an operand in the update expression has an incorrect data type (ADD %s to %s)", typeName(v), typeName(cur))
}

func deletePath(item Item, p path, v value) error {
	cur, ok := resolve(item, p)
	if !ok {
		return nil
	}
	if typeName(cur) != typeName(v) || !strings.HasSuffix(typeName(v), "S") || typeName(v) == "S" {
		return fmt.Errorf("an operand in the update expression has an incorrect data type (DELETE %s from %s)", typeName(v), typeName(cur))
	}
	rest := setDifference(cur, v)
	if rest == nil {
		return removePath(item, p)
	}
	return setPath(item, p, rest)
}

// setMembers lists a set's members as comparable strings.
func setMembers(v value) []string {
	switch s := v.(type) {
	case *types.AttributeValueMemberSS:
		return s.Value
	case *types.AttributeValueMemberNS:
		out := make([]string, len(s.Value))
		for i, n := range s.Value {
			x, _ := parseNumber(n)
			out[i] = formatNumber(x)
		}
		return out
	case *types.AttributeValueMemberBS:
		out := make([]string, len(s.Value))
		for i, b := range s.Value {
			out[i] = string(b)
		}
		return out
	}
	return nil
}

func makeSet(like value, members []string) value {
	if len(members) == 0 {
		return nil
	}
	switch like.(type) {
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: members}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: members}
	}
	bs := make([][]byte, len(members))
	for i, m := range members {
		bs[i] = []byte(m)
	}
	return &types.AttributeValueMemberBS{Value: bs}
}

func setUnion(a, b value) value {
	out := slices.Clone(setMembers(a))
	for _, m := range setMembers(b) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return makeSet(a, out)
}

func setDifference(a, b value) value {
	drop := setMembers(b)
	var out []string
	for _, m := range setMembers(a) {
		if !slices.Contains(drop, m) {
			out = append(out, m)
		}
	}
	return makeSet(a, out)
}

func contains(haystack, needle value) bool {
	switch h := haystack.(type) {
	case *types.AttributeValueMemberS:
		n, ok := needle.(*types.AttributeValueMemberS)
		return ok && strings.Contains(h.Value, n.Value)
	case *types.AttributeValueMemberB:
		n, ok := needle.(*types.AttributeValueMemberB)
		return ok && bytes.Contains(h.Value, n.Value)
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		want := map[string]string{"SS": "S", "NS": "N", "BS": "B"}[typeName(haystack)]
		if typeName(needle) != want {
			return false
		}
		m := setMembers(makeSet(haystack, []string{scalar(needle)}))
		return len(m) == 1 && slices.Contains(setMembers(haystack), m[0])
	case *types.AttributeValueMemberL:
		return slices.ContainsFunc(h.Value, func(v value) bool { return equal(v, needle) })
	}
	return false
}
