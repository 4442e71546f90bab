package deploy

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// noValue stands for AWS::NoValue: the property it is the value of is removed (CDK uses it with
// Fn::If for optional properties).
type noValue struct{}

// ResolveError reports an intrinsic function that cannot be evaluated. Path locates it in the
// template ("Fn.Properties.Environment.Variables.QUEUE_URL.Fn::GetAtt"), so a user can find the
// construct that wrote it.
type ResolveError struct {
	Stack, Path, Reason string
}

// Error names the stack, the path and the reason.
func (e *ResolveError) Error() string {
	return "deploy: stack " + e.Stack + ": " + e.Path + ": " + e.Reason
}

// resolver evaluates CloudFormation intrinsic functions against what has been deployed. The
// emulator's CloudFormation resolves the templates it gets itself; this resolver is for what
// never reaches it: the properties of functions, event source mappings and schedules, Conditions,
// and the names of local resources. Lookups of resources and exports are functions, so the
// resolver knows nothing of how the deployment stores them (and tests can fake them).
type resolver struct {
	stack                     string
	stackID                   string
	region, account           string
	params                    map[string]any
	mappings                  map[string]any
	conditions                map[string]bool
	ref                       func(logicalID string) (string, bool)
	getAtt                    func(logicalID, attr string) (string, error)
	importValue               func(name string) (string, bool)
	condDefs                  map[string]any // the template's Conditions section
	evaluatingConditionsStack []string       // conditions being evaluated, to catch a cycle
}

// fail returns a ResolveError at path.
func (r *resolver) fail(path, format string, args ...any) error {
	return &ResolveError{Stack: r.stack, Path: path, Reason: fmt.Sprintf(format, args...)}
}

// pseudo returns the value of a pseudo parameter (AWS::Region, AWS::AccountId, ...), and false
// for any other name.
func (r *resolver) pseudo(name string) (any, bool) {
	switch name {
	case "AWS::Region":
		return r.region, true
	case "AWS::AccountId":
		return r.account, true
	case "AWS::Partition":
		return awsarn.Partition(r.region), true
	case "AWS::URLSuffix":
		if strings.HasPrefix(r.region, "cn-") {
			return "amazonaws.com.cn", true
		}
		return "amazonaws.com", true
	case "AWS::StackName":
		return r.stack, true
	case "AWS::StackId":
		return r.stackID, true
	case "AWS::NoValue":
		return noValue{}, true
	case "AWS::NotificationARNs":
		return []any{}, true
	}
	return nil, false
}

// eval evaluates v: plain values pass through, intrinsic functions are applied, AWS::NoValue
// removes map entries and list items.
func (r *resolver) eval(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg, path)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			ev, err := r.eval(val, path+"."+k)
			if err != nil {
				return nil, err
			}
			if _, skip := ev.(noValue); skip {
				continue
			}
			out[k] = ev
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, val := range x {
			ev, err := r.eval(val, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			if _, skip := ev.(noValue); skip {
				continue
			}
			out = append(out, ev)
		}
		return out, nil
	}
	return v, nil
}

// evalString evaluates v and requires a scalar, returned as a string.
func (r *resolver) evalString(v any, path string) (string, error) {
	ev, err := r.eval(v, path)
	if err != nil {
		return "", err
	}
	s, ok := scalarString(ev)
	if !ok {
		return "", r.fail(path, "expected a string, got %T", ev)
	}
	return s, nil
}

// scalarString returns a JSON scalar (string, number, bool) as CloudFormation would put it into a
// string: numbers without exponent or trailing zeros. false for lists, maps and nil.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// intrinsic applies the intrinsic function fn (Ref or Fn::*) to its argument, as CloudFormation
// does when it creates a stack. The condition functions are evaluated by condExpr; Fn::GetAZs
// answers three zones, as every emulator region has them. Transforms, Fn::Cidr, Fn::Length and
// Fn::ToJsonString (language extensions) are not supported: CDK output does not need them.
func (r *resolver) intrinsic(fn string, arg any, path string) (any, error) {
	path += "." + fn
	switch fn {
	case "Ref":
		return r.refFn(arg, path)
	case "Fn::GetAtt":
		return r.getAttFn(arg, path)
	case "Fn::ImportValue":
		name, err := r.evalString(arg, path)
		if err != nil {
			return nil, err
		}
		v, ok := r.importValue(name)
		if !ok {
			return nil, r.fail(path, "no export named %q", name)
		}
		return v, nil
	case "Fn::Join":
		return r.joinFn(arg, path)
	case "Fn::Sub":
		return r.subFn(arg, path)
	case "Fn::Select":
		return r.selectFn(arg, path)
	case "Fn::Split":
		return r.splitFn(arg, path)
	case "Fn::If":
		return r.ifFn(arg, path)
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or":
		return r.condExpr(map[string]any{fn: arg}, path)
	case "Fn::FindInMap":
		return r.findInMapFn(arg, path)
	case "Fn::Base64":
		s, err := r.evalString(arg, path)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "Fn::GetAZs":
		return []any{r.region + "a", r.region + "b", r.region + "c"}, nil
	}
	return nil, r.fail(path, "unsupported intrinsic function %s", fn)
}

// refFn is Ref: a pseudo parameter, then a template parameter, then a resource's physical id, the
// order in which CloudFormation looks names up.
func (r *resolver) refFn(arg any, path string) (any, error) {
	name, ok := arg.(string)
	if !ok {
		return nil, r.fail(path, "Ref takes a name")
	}
	if v, ok := r.pseudo(name); ok {
		return v, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if v, ok := r.ref(name); ok {
		return v, nil
	}
	return nil, r.fail(path, "Ref to unknown %q", name)
}

// getAttFn is Fn::GetAtt, in both its forms: [resource, attribute] (the attribute may itself be
// an intrinsic function) and the short "Resource.Attribute".
func (r *resolver) getAttFn(arg any, path string) (any, error) {
	var logical, attr string
	switch a := arg.(type) {
	case []any:
		if len(a) != 2 {
			return nil, r.fail(path, "Fn::GetAtt takes [resource, attribute]")
		}
		logical, _ = a[0].(string)
		av, err := r.evalString(a[1], path)
		if err != nil {
			return nil, err
		}
		attr = av
	case string:
		logical, attr, _ = strings.Cut(a, ".")
	}
	if logical == "" || attr == "" {
		return nil, r.fail(path, "Fn::GetAtt takes [resource, attribute]")
	}
	v, err := r.getAtt(logical, attr)
	if err != nil {
		return nil, r.fail(path, "%v", err)
	}
	return v, nil
}

// joinFn is Fn::Join: [delimiter, list], every item a scalar once evaluated.
func (r *resolver) joinFn(arg any, path string) (any, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 2 {
		return nil, r.fail(path, "Fn::Join takes [delimiter, list]")
	}
	delim, _ := a[0].(string)
	list, err := r.eval(a[1], path)
	if err != nil {
		return nil, err
	}
	items, ok := list.([]any)
	if !ok {
		return nil, r.fail(path, "Fn::Join needs a list")
	}
	parts := make([]string, len(items))
	for i, it := range items {
		s, ok := scalarString(it)
		if !ok {
			return nil, r.fail(path, "Fn::Join item %d is not a string", i)
		}
		parts[i] = s
	}
	return strings.Join(parts, delim), nil
}

// subFn is Fn::Sub: a template string, or [template, variables] whose variables are evaluated
// first; sub renders it.
func (r *resolver) subFn(arg any, path string) (any, error) {
	var tmpl string
	vars := map[string]any{}
	switch a := arg.(type) {
	case string:
		tmpl = a
	case []any:
		if len(a) != 2 {
			return nil, r.fail(path, "Fn::Sub takes a string or [string, variables]")
		}
		tmpl, _ = a[0].(string)
		m, ok := a[1].(map[string]any)
		if !ok {
			return nil, r.fail(path, "Fn::Sub variables must be a map")
		}
		for k, v := range m {
			ev, err := r.eval(v, path+"."+k)
			if err != nil {
				return nil, err
			}
			vars[k] = ev
		}
	default:
		return nil, r.fail(path, "Fn::Sub takes a string or [string, variables]")
	}
	return r.sub(tmpl, vars, path)
}

// selectFn is Fn::Select: [index, list]; the index may be a string, as CDK writes it.
func (r *resolver) selectFn(arg any, path string) (any, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 2 {
		return nil, r.fail(path, "Fn::Select takes [index, list]")
	}
	is, err := r.evalString(a[0], path)
	if err != nil {
		return nil, err
	}
	i, err := strconv.Atoi(is)
	if err != nil {
		return nil, r.fail(path, "Fn::Select index %q", is)
	}
	list, err := r.eval(a[1], path)
	if err != nil {
		return nil, err
	}
	items, ok := list.([]any)
	if !ok || i < 0 || i >= len(items) {
		return nil, r.fail(path, "Fn::Select index %d out of range", i)
	}
	return items[i], nil
}

// splitFn is Fn::Split: [delimiter, string]. CDK uses it with Fn::Select to take ARNs apart.
func (r *resolver) splitFn(arg any, path string) (any, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 2 {
		return nil, r.fail(path, "Fn::Split takes [delimiter, string]")
	}
	delim, _ := a[0].(string)
	s, err := r.evalString(a[1], path)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, p := range strings.Split(s, delim) {
		out = append(out, p)
	}
	return out, nil
}

// ifFn is Fn::If: [condition, then, else]; only the branch taken is evaluated, so the other may
// refer to a resource that does not exist under the condition.
func (r *resolver) ifFn(arg any, path string) (any, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 3 {
		return nil, r.fail(path, "Fn::If takes [condition, then, else]")
	}
	name, _ := a[0].(string)
	c, err := r.condition(name)
	if err != nil {
		return nil, err
	}
	if c {
		return r.eval(a[1], path)
	}
	return r.eval(a[2], path)
}

// findInMapFn is Fn::FindInMap: [map, top-level key, second-level key] of the template's Mappings.
func (r *resolver) findInMapFn(arg any, path string) (any, error) {
	a, ok := arg.([]any)
	if !ok || len(a) != 3 {
		return nil, r.fail(path, "Fn::FindInMap takes [map, key, key]")
	}
	keys := make([]string, 3)
	for i := range a {
		s, err := r.evalString(a[i], path)
		if err != nil {
			return nil, err
		}
		keys[i] = s
	}
	m1, _ := r.mappings[keys[0]].(map[string]any)
	m2, _ := m1[keys[1]].(map[string]any)
	v, ok := m2[keys[2]]
	if !ok {
		return nil, r.fail(path, "no mapping %s/%s/%s", keys[0], keys[1], keys[2])
	}
	return v, nil
}

// sub renders a Fn::Sub template: ${Name}, ${Resource.Attribute}, and ${!Literal} for "${Literal}".
func (r *resolver) sub(tmpl string, vars map[string]any, path string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			b.WriteString(tmpl)
			return b.String(), nil
		}
		b.WriteString(tmpl[:i])
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return "", r.fail(path, "unterminated ${ in Fn::Sub")
		}
		name := tmpl[i+2 : i+j]
		tmpl = tmpl[i+j+1:]
		if lit, ok := strings.CutPrefix(name, "!"); ok {
			b.WriteString("${" + lit + "}")
			continue
		}
		var v any
		if val, ok := vars[name]; ok {
			v = val
		} else if logical, attr, ok := strings.Cut(name, "."); ok {
			s, err := r.getAtt(logical, attr)
			if err != nil {
				return "", r.fail(path, "%v", err)
			}
			v = s
		} else {
			ev, err := r.intrinsic("Ref", name, path)
			if err != nil {
				return "", err
			}
			v = ev
		}
		s, ok := scalarString(v)
		if !ok {
			return "", r.fail(path, "${%s} is not a string", name)
		}
		b.WriteString(s)
	}
}

// condition evaluates a named condition of the template, once: the result is cached, and a
// condition that refers back to itself is an error rather than endless recursion.
func (r *resolver) condition(name string) (bool, error) {
	if v, ok := r.conditions[name]; ok {
		return v, nil
	}
	def, ok := r.condDefs[name]
	if !ok {
		return false, r.fail("Conditions", "unknown condition %q", name)
	}
	for _, n := range r.evaluatingConditionsStack {
		if n == name {
			return false, r.fail("Conditions", "condition %q refers to itself", name)
		}
	}
	r.evaluatingConditionsStack = append(r.evaluatingConditionsStack, name)
	v, err := r.condExpr(def, "Conditions."+name)
	r.evaluatingConditionsStack = r.evaluatingConditionsStack[:len(r.evaluatingConditionsStack)-1]
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, r.fail("Conditions."+name, "not a boolean")
	}
	if r.conditions == nil {
		r.conditions = map[string]bool{}
	}
	r.conditions[name] = b
	return b, nil
}

// condExpr evaluates a condition expression: a {"Condition": name} reference, Fn::Equals (as
// strings, so 1 equals "1" as in CloudFormation), or Fn::Not, Fn::And, Fn::Or over conditions.
// Anything else is evaluated as a plain value (Fn::If inside a condition, a literal true).
func (r *resolver) condExpr(v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return r.eval(v, path)
	}
	for fn, arg := range m {
		switch fn {
		case "Condition":
			name, _ := arg.(string)
			return r.condition(name)
		case "Fn::Equals":
			a, ok := arg.([]any)
			if !ok || len(a) != 2 {
				return nil, r.fail(path, "Fn::Equals takes two values")
			}
			x, err := r.evalString(a[0], path)
			if err != nil {
				return nil, err
			}
			y, err := r.evalString(a[1], path)
			if err != nil {
				return nil, err
			}
			return x == y, nil
		case "Fn::Not", "Fn::And", "Fn::Or":
			a, ok := arg.([]any)
			if !ok || len(a) == 0 {
				return nil, r.fail(path, "%s takes a list of conditions", fn)
			}
			vals := make([]bool, len(a))
			for i, c := range a {
				ev, err := r.condExpr(c, path)
				if err != nil {
					return nil, err
				}
				b, ok := ev.(bool)
				if !ok {
					return nil, r.fail(path, "%s operand %d is not a condition", fn, i)
				}
				vals[i] = b
			}
			switch fn {
			case "Fn::Not":
				return !vals[0], nil
			case "Fn::And":
				for _, b := range vals {
					if !b {
						return false, nil
					}
				}
				return true, nil
			default:
				for _, b := range vals {
					if b {
						return true, nil
					}
				}
				return false, nil
			}
		}
	}
	return r.eval(v, path)
}

// subNames lists the ${...} names of a Fn::Sub template (not ${!literals}).
func subNames(tmpl string) []string {
	var names []string
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			return names
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return names
		}
		name := tmpl[i+2 : i+j]
		if !strings.HasPrefix(name, "!") {
			names = append(names, name)
		}
		tmpl = tmpl[i+j+1:]
	}
}
