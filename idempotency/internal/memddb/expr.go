package memddb

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The expression grammar of DynamoDB's ConditionExpression and UpdateExpression (the developer
// guide's "Condition and filter expressions" and "Update expressions"), parsed into a small tree
// evaluated against one item.

// reserved holds the words DynamoDB reserves (the developer guide's "Reserved words in
// DynamoDB", 573 words): an expression naming an attribute by one of them, not through an
// expression attribute name, is refused.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(reservedWords) {
		m[w] = true
	}
	return m
}()

//go:embed reserved_words.txt
var reservedWords string

// path is a document path: a top-level name, then map keys and list indexes.
type path []pathStep

type pathStep struct {
	name  string
	index int // when name == ""
}

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.name == "":
			fmt.Fprintf(&b, "[%d]", s.index)
		case i > 0:
			b.WriteString("." + s.name)
		default:
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// operand is a value in an expression: a path, a placeholder's value, size(path), or (in SET)
// if_not_exists, list_append and + / -.
type operand struct {
	path  path
	value *value    // a :placeholder
	fn    string    // size, if_not_exists, list_append, +, -
	args  []operand // fn's
}

// cond is a condition: a comparison, a function, or AND / OR / NOT of conditions.
type cond struct {
	op   string // = <> < <= > >= BETWEEN IN AND OR NOT, or a function name
	args []operand
	subs []*cond
}

type token struct {
	kind string // name, value, num, punct, eof
	text string
}

type lexer struct {
	toks  []token
	pos   int
	names map[string]string
	vals  map[string]value
}

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ':' || c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
				j++
			}
			kind := "name"
			if c == ':' {
				kind = "value"
			}
			toks = append(toks, token{kind, s[i:j]})
			i = j
		case unicode.IsDigit(rune(c)):
			j := i
			for j < len(s) && unicode.IsDigit(rune(s[j])) {
				j++
			}
			toks = append(toks, token{"num", s[i:j]})
			i = j
		case strings.HasPrefix(s[i:], "<>") || strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			toks = append(toks, token{"punct", s[i : i+2]})
			i += 2
		case strings.ContainsRune("=<>(),.[]+-", rune(c)):
			toks = append(toks, token{"punct", string(c)})
			i++
		default:
			return nil, fmt.Errorf("invalid character %q at %d", c, i)
		}
	}
	return append(toks, token{kind: "eof"}), nil
}

func newLexer(expr string, names map[string]string, vals map[string]value) (*lexer, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	return &lexer{toks: toks, names: names, vals: vals}, nil
}

func (l *lexer) peek() token { return l.toks[l.pos] }
func (l *lexer) next() token { t := l.toks[l.pos]; l.pos++; return t }

func (l *lexer) keyword(k string) bool {
	if t := l.peek(); t.kind == "name" && strings.EqualFold(t.text, k) {
		l.pos++
		return true
	}
	return false
}

func (l *lexer) punct(p string) bool {
	if t := l.peek(); t.kind == "punct" && t.text == p {
		l.pos++
		return true
	}
	return false
}

func (l *lexer) expect(p string) error {
	if !l.punct(p) {
		return fmt.Errorf("expected %q, found %q", p, l.peek().text)
	}
	return nil
}

// parsePath reads a document path.
func (l *lexer) parsePath() (path, error) {
	var p path
	for {
		t := l.next()
		if t.kind != "name" {
			return nil, fmt.Errorf("expected an attribute name, found %q", t.text)
		}
		name := t.text
		if reserved[strings.ToUpper(name)] {
			return nil, fmt.Errorf("attribute name is a reserved keyword; reserved keyword: %s", name)
		}
		if strings.HasPrefix(name, "#") {
			n, ok := l.names[name]
			if !ok {
				return nil, fmt.Errorf("an expression attribute name used in the document path is not defined; attribute name: %s", name)
			}
			name = n
		}
		if name == "" {
			return nil, fmt.Errorf("an expression attribute name is empty: %s", t.text)
		}
		p = append(p, pathStep{name: name})
		for l.punct("[") {
			t := l.next()
			if t.kind != "num" {
				return nil, fmt.Errorf("expected a list index, found %q", t.text)
			}
			n, err := strconv.Atoi(t.text)
			if err != nil {
				return nil, fmt.Errorf("invalid list index %s", t.text)
			}
			p = append(p, pathStep{index: n})
			if err := l.expect("]"); err != nil {
				return nil, err
			}
		}
		if !l.punct(".") {
			return p, nil
		}
	}
}

// parseOperand reads a path, a placeholder or a function of them; set allows SET's functions
// and + / - (of two such operands).
func (l *lexer) parseOperand(set bool) (operand, error) {
	o, err := l.parseTerm(set)
	if err != nil || !set {
		return o, err
	}
	if op := l.peek(); op.kind == "punct" && (op.text == "+" || op.text == "-") {
		l.pos++
		rhs, err := l.parseTerm(set)
		if err != nil {
			return o, err
		}
		return operand{fn: op.text, args: []operand{o, rhs}}, nil
	}
	return o, nil
}

// parseTerm reads one operand of parseOperand.
func (l *lexer) parseTerm(set bool) (operand, error) {
	t := l.peek()
	var o operand
	switch {
	case t.kind == "value":
		l.pos++
		v, ok := l.vals[t.text]
		if !ok {
			return o, fmt.Errorf("an expression attribute value used in expression is not defined; attribute value: %s", t.text)
		}
		o.value = &v
	case t.kind == "name" && l.toks[l.pos+1].text == "(":
		fn := strings.ToLower(t.text)
		if fn != "size" && !(set && (fn == "if_not_exists" || fn == "list_append")) {
			return o, fmt.Errorf("invalid function name in this position: %s", t.text)
		}
		l.pos += 2
		for {
			a, err := l.parseOperand(set)
			if err != nil {
				return o, err
			}
			o.args = append(o.args, a)
			if !l.punct(",") {
				break
			}
		}
		if err := l.expect(")"); err != nil {
			return o, err
		}
		o.fn = fn
		if want := map[string]int{"size": 1, "if_not_exists": 2, "list_append": 2}[fn]; len(o.args) != want {
			return o, fmt.Errorf("incorrect number of operands for %s", fn)
		}
		if (fn == "size" || fn == "if_not_exists") && o.args[0].path == nil {
			return o, fmt.Errorf("%s takes a document path first", fn)
		}
	default:
		p, err := l.parsePath()
		if err != nil {
			return o, err
		}
		o.path = p
	}
	return o, nil
}

// parseCondition reads a whole condition expression.
func parseCondition(expr string, names map[string]string, vals map[string]value) (*cond, error) {
	l, err := newLexer(expr, names, vals)
	if err != nil {
		return nil, err
	}
	c, err := l.parseOr()
	if err != nil {
		return nil, err
	}
	if t := l.peek(); t.kind != "eof" {
		return nil, fmt.Errorf("syntax error; token: %q", t.text)
	}
	return c, nil
}

func (l *lexer) parseOr() (*cond, error) {
	c, err := l.parseAnd()
	for err == nil && l.keyword("OR") {
		var r *cond
		if r, err = l.parseAnd(); err == nil {
			c = &cond{op: "OR", subs: []*cond{c, r}}
		}
	}
	return c, err
}

func (l *lexer) parseAnd() (*cond, error) {
	c, err := l.parseNot()
	for err == nil && l.keyword("AND") {
		var r *cond
		if r, err = l.parseNot(); err == nil {
			c = &cond{op: "AND", subs: []*cond{c, r}}
		}
	}
	return c, err
}

func (l *lexer) parseNot() (*cond, error) {
	if l.keyword("NOT") {
		c, err := l.parseNot()
		if err != nil {
			return nil, err
		}
		return &cond{op: "NOT", subs: []*cond{c}}, nil
	}
	return l.parseAtom()
}

var condFuncs = map[string]int{"attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2, "begins_with": 2, "contains": 2}

func (l *lexer) parseAtom() (*cond, error) {
	if l.punct("(") {
		c, err := l.parseOr()
		if err != nil {
			return nil, err
		}
		return c, l.expect(")")
	}
	if t := l.peek(); t.kind == "name" && l.toks[l.pos+1].text == "(" {
		if n, ok := condFuncs[strings.ToLower(t.text)]; ok {
			l.pos += 2
			c := &cond{op: strings.ToLower(t.text)}
			for {
				a, err := l.parseOperand(false)
				if err != nil {
					return nil, err
				}
				c.args = append(c.args, a)
				if !l.punct(",") {
					break
				}
			}
			if err := l.expect(")"); err != nil {
				return nil, err
			}
			if len(c.args) != n {
				return nil, fmt.Errorf("incorrect number of operands for %s", c.op)
			}
			if c.args[0].path == nil {
				return nil, fmt.Errorf("%s takes a document path first", c.op)
			}
			if c.op == "begins_with" {
				if v := c.args[1].value; v != nil && typeName(*v) != "S" && typeName(*v) != "B" {
					return nil, fmt.Errorf("incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", typeName(*v))
				}
			}
			return c, nil
		}
	}
	lhs, err := l.parseOperand(false)
	if err != nil {
		return nil, err
	}
	t := l.peek()
	switch {
	case t.kind == "punct" && strings.Contains(" = <> < <= > >= ", " "+t.text+" "):
		l.pos++
		rhs, err := l.parseOperand(false)
		if err != nil {
			return nil, err
		}
		if t.text != "=" && t.text != "<>" {
			if err := ordered(t.text, lhs, rhs); err != nil {
				return nil, err
			}
		}
		return &cond{op: t.text, args: []operand{lhs, rhs}}, nil
	case l.keyword("BETWEEN"):
		lo, err := l.parseOperand(false)
		if err != nil {
			return nil, err
		}
		if !l.keyword("AND") {
			return nil, fmt.Errorf("BETWEEN needs AND")
		}
		hi, err := l.parseOperand(false)
		if err != nil {
			return nil, err
		}
		if err := ordered("BETWEEN", lhs, lo, hi); err != nil {
			return nil, err
		}
		if lo.value != nil && hi.value != nil {
			if n, ok, _ := order(*lo.value, *hi.value); ok && n > 0 {
				return nil, fmt.Errorf("invalid ConditionExpression: the BETWEEN operator requires upper bound to be greater than or equal to lower bound")
			}
		}
		return &cond{op: "BETWEEN", args: []operand{lhs, lo, hi}}, nil
	case l.keyword("IN"):
		if err := l.expect("("); err != nil {
			return nil, err
		}
		c := &cond{op: "IN", args: []operand{lhs}}
		for {
			o, err := l.parseOperand(false)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, o)
			if !l.punct(",") {
				break
			}
		}
		return c, l.expect(")")
	}
	return nil, fmt.Errorf("syntax error; token: %q", t.text)
}

// action is one clause of an update expression.
type action struct {
	kind string // SET REMOVE ADD DELETE
	path path
	val  operand // SET's value, ADD's and DELETE's placeholder
}

func parseUpdate(expr string, names map[string]string, vals map[string]value) ([]action, error) {
	l, err := newLexer(expr, names, vals)
	if err != nil {
		return nil, err
	}
	var acts []action
	seen := map[string]bool{}
	for l.peek().kind != "eof" {
		t := l.next()
		kind := strings.ToUpper(t.text)
		if t.kind != "name" || !strings.Contains(" SET REMOVE ADD DELETE ", " "+kind+" ") {
			return nil, fmt.Errorf("syntax error; token: %q", t.text)
		}
		if seen[kind] {
			return nil, fmt.Errorf("the %s section can only be used once in an update expression", kind)
		}
		seen[kind] = true
		for {
			p, err := l.parsePath()
			if err != nil {
				return nil, err
			}
			a := action{kind: kind, path: p}
			switch kind {
			case "SET":
				if err := l.expect("="); err != nil {
					return nil, err
				}
				if a.val, err = l.parseOperand(true); err != nil {
					return nil, err
				}
			case "ADD", "DELETE":
				if a.val, err = l.parseOperand(false); err != nil {
					return nil, err
				}
				if a.val.value == nil {
					return nil, fmt.Errorf("%s takes an expression attribute value", kind)
				}
			}
			acts = append(acts, a)
			if !l.punct(",") {
				break
			}
		}
	}
	if len(acts) == 0 {
		return nil, fmt.Errorf("the update expression is empty")
	}
	for i, a := range acts {
		for _, b := range acts[i+1:] {
			if overlaps(a.path, b.path) {
				return nil, fmt.Errorf("two document paths overlap with each other; must remove or rewrite one of these paths; path one: [%s], path two: [%s]", a.path, b.path)
			}
		}
	}
	return acts, nil
}

// overlaps reports whether one path is a prefix of the other.
func overlaps(a, b path) bool {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ordered refuses, as DynamoDB does before evaluating anything, a placeholder of a type that has
// no order (only N, S and B compare) as an operand of op.
func ordered(op string, operands ...operand) error {
	for _, o := range operands {
		if o.value == nil {
			continue
		}
		if t := typeName(*o.value); t != "N" && t != "S" && t != "B" {
			return fmt.Errorf("incorrect operand type for operator or function; operator or function: %s, operand type: %s", op, t)
		}
	}
	return nil
}
