package memddb

import (
	"bytes"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// scalar is v's value as text, for a string, number or binary; "" for any other type.
func scalar(v value) string {
	switch s := v.(type) {
	case *types.AttributeValueMemberS:
		return s.Value
	case *types.AttributeValueMemberN:
		return s.Value
	case *types.AttributeValueMemberB:
		return string(s.Value)
	}
	return ""
}

// typeName is a value's DynamoDB type: S, N, B, SS, NS, BS, BOOL, NULL, L or M.
func typeName(v value) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*types.AttributeValueMember")
}

// equal compares two values as DynamoDB's = does: numbers by value, sets as sets.
func equal(a, b value) bool {
	if typeName(a) != typeName(b) {
		return false
	}
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		n, ok, err := order(a, b)
		return err == nil && ok && n == 0
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		ma, mb := setMembers(a), setMembers(b)
		if len(ma) != len(mb) {
			return false
		}
		for _, m := range ma {
			if !slices.Contains(mb, m) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberBOOL:
		return x.Value == b.(*types.AttributeValueMemberBOOL).Value
	case *types.AttributeValueMemberNULL:
		return true
	case *types.AttributeValueMemberL:
		y := b.(*types.AttributeValueMemberL)
		return slices.EqualFunc(x.Value, y.Value, equal)
	case *types.AttributeValueMemberM:
		y := b.(*types.AttributeValueMemberM)
		return maps.EqualFunc(x.Value, y.Value, equal)
	}
	return scalar(a) == scalar(b)
}

// order compares two values of an ordered type (N, S, B); ok is false for other or mixed types.
func order(a, b value) (int, bool, error) {
	if typeName(a) != typeName(b) {
		return 0, false, nil
	}
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		p, err := parseNumber(x.Value)
		if err != nil {
			return 0, false, err
		}
		q, err := parseNumber(b.(*types.AttributeValueMemberN).Value)
		if err != nil {
			return 0, false, err
		}
		return p.Cmp(q), true, nil
	case *types.AttributeValueMemberS:
		return strings.Compare(x.Value, b.(*types.AttributeValueMemberS).Value), true, nil
	case *types.AttributeValueMemberB:
		return bytes.Compare(x.Value, b.(*types.AttributeValueMemberB).Value), true, nil
	}
	return 0, false, nil
}

// number is the shape of a DynamoDB number; its exponent is bounded before big.Rat reads it.
var number = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?(\d{1,3}))?$`)

// parseNumber reads a DynamoDB number exactly.
func parseNumber(s string) (*big.Rat, error) {
	if !number.MatchString(s) {
		return nil, fmt.Errorf("a value provided cannot be converted into a number: %q", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("a value provided cannot be converted into a number: %q", s)
	}
	return r, nil
}

// formatNumber writes a number as DynamoDB returns it: no exponent, no trailing zeros.
func formatNumber(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for places := 1; places <= 130; places++ {
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)))
		if scaled.IsInt() {
			return r.FloatString(places)
		}
	}
	return r.FloatString(38)
}

// clone copies an item deeply enough that later writes to the copy leave the original alone.
func clone(item Item) Item { return copyItem(item, nil) }

// normalized returns a copy of item as DynamoDB stores it: numbers without exponents or trailing
// zeros.
func normalized(item Item) Item { return copyItem(item, canonicalNumber) }

// canonicalNumber writes a number as DynamoDB returns it (a number it cannot read, as it is).
func canonicalNumber(s string) string {
	r, err := parseNumber(s)
	if err != nil {
		return s
	}
	return formatNumber(r)
}

func cloneValue(v value) value { return copyValue(v, nil) }

// copyItem copies item deeply, numbers through num when it is not nil.
func copyItem(item Item, num func(string) string) Item {
	if item == nil {
		return nil
	}
	out := make(Item, len(item))
	for k, v := range item {
		out[k] = copyValue(v, num)
	}
	return out
}

func copyValue(v value, num func(string) string) value {
	numbers := func(ns []string) []string {
		out := slices.Clone(ns)
		for i := range out {
			if num != nil {
				out[i] = num(out[i])
			}
		}
		return out
	}
	switch x := v.(type) {
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: copyItem(x.Value, num)}
	case *types.AttributeValueMemberL:
		l := make([]value, len(x.Value))
		for i, e := range x.Value {
			l[i] = copyValue(e, num)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: x.Value}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: numbers([]string{x.Value})[0]}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(x.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: numbers(x.Value)}
	case *types.AttributeValueMemberBS:
		bs := make([][]byte, len(x.Value))
		for i, b := range x.Value {
			bs[i] = slices.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: x.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: x.Value}
	}
	return v
}
