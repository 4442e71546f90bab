// Package cfntest reads synthesized CloudFormation templates in tests: resources by type, values
// by path, IAM statements, and the checks every jobkit template must pass.
package cfntest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/stretchr/testify/require"
)

// Template is a synthesized template as plain Go values.
type Template map[string]any

// Synth synthesizes stack (and its app) and returns its template.
func Synth(t testing.TB, stack awscdk.Stack) Template {
	t.Helper()
	return FromJSON(t, assertions.Template_FromStack(stack, nil).ToJSON())
}

// ReadFile reads a template written by a synth (<outdir>/<stack>.template.json).
func ReadFile(t testing.TB, path string) Template {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return decode(t, raw)
}

// FromJSON converts any JSON-shaped value into a Template.
func FromJSON(t testing.TB, v any) Template {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return decode(t, raw)
}

func decode(t testing.TB, raw []byte) Template {
	t.Helper()
	var tpl Template
	require.NoError(t, json.Unmarshal(raw, &tpl))
	return tpl
}

// Resources returns the logical ids and bodies of the resources of type typ.
func (tpl Template) Resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	res, _ := tpl["Resources"].(map[string]any)
	for id, r := range res {
		body, _ := r.(map[string]any)
		if body["Type"] == typ {
			out[id] = body
		}
	}
	return out
}

// Only returns the single resource of type typ, failing if there is not exactly one.
func (tpl Template) Only(t testing.TB, typ string) (string, map[string]any) {
	t.Helper()
	res := tpl.Resources(typ)
	require.Len(t, res, 1, "resources of type %s", typ)
	for id, body := range res {
		return id, body
	}
	panic("unreachable")
}

// Props returns a resource's Properties.
func Props(body map[string]any) map[string]any {
	p, _ := body["Properties"].(map[string]any)
	return p
}

// Get walks a dotted path of map keys and slice indexes ("a.b.0.c"); nil if absent.
// A key holding dots cannot be reached; use Get on the parent map and index it.
func Get(v any, path string) any {
	if tpl, ok := v.(Template); ok {
		v = map[string]any(tpl)
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Resolved returns a token of stack as the template renders it ({"Fn::GetAtt": [...]},
// {"Ref": ...}), to compare with what Get reads.
func Resolved(t testing.TB, stack awscdk.Stack, token any) any {
	t.Helper()
	b, err := json.Marshal(stack.Resolve(token))
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}

// Ref is {"Ref": id}.
func Ref(id string) map[string]any { return map[string]any{"Ref": id} }

// GetAtt is {"Fn::GetAtt": [id, attr]}.
func GetAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

// Statements returns every IAM statement in the template's resources: identity policies, role
// documents and resource policies (queue policies and the like).
func (tpl Template) Statements() []map[string]any {
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if list, ok := x["Statement"].([]any); ok {
				for _, s := range list {
					if m, ok := s.(map[string]any); ok {
						out = append(out, m)
					}
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(tpl["Resources"])
	return out
}

// Actions returns a statement's actions.
func Actions(st map[string]any) []string {
	switch a := st["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// RequireNoWildcardGrant fails if any statement grants an action with a wildcard or uses
// NotAction. The only wildcard actions accepted are in Deny statements conditioned on
// aws:SecureTransport=false: that is how enforceSSL denies every action over plain HTTP.
func RequireNoWildcardGrant(t testing.TB, tpl Template) {
	t.Helper()
	sts := tpl.Statements()
	require.NotEmpty(t, sts)
	for _, st := range sts {
		require.NotContains(t, st, "NotAction", "NotAction grants everything else: %v", st)
		for _, a := range Actions(st) {
			if !strings.Contains(a, "*") {
				continue
			}
			require.Equal(t, "Deny", st["Effect"], "wildcard action %q granted in %v", a, st)
			require.Equal(t, "false", Get(st, "Condition.Bool.aws:SecureTransport"),
				"a wildcard Deny must be the TLS-only guard: %v", st)
		}
	}
}

// AllowedActions returns the actions that Allow statements grant on resource (compared as JSON).
func (tpl Template) AllowedActions(resource any) map[string]bool {
	want, _ := json.Marshal(resource)
	out := map[string]bool{}
	for _, st := range tpl.Statements() {
		if st["Effect"] != "Allow" {
			continue
		}
		for _, r := range resources(st) {
			if got, _ := json.Marshal(r); string(got) == string(want) {
				for _, a := range Actions(st) {
					out[a] = true
				}
			}
		}
	}
	return out
}

// RoleGrants returns what the identity policies attached to role roleID allow: by resource (its
// JSON), the actions. Statements with a condition are keyed by resource and condition, joined by
// " if ".
func (tpl Template) RoleGrants(roleID string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, body := range tpl.Resources("AWS::IAM::Policy") {
		roles, _ := Get(body, "Properties.Roles").([]any)
		attached := false
		for _, r := range roles {
			if m, ok := r.(map[string]any); ok && m["Ref"] == roleID {
				attached = true
			}
		}
		if !attached {
			continue
		}
		sts, _ := Get(body, "Properties.PolicyDocument.Statement").([]any)
		for _, s := range sts {
			st, _ := s.(map[string]any)
			if st["Effect"] != "Allow" {
				continue
			}
			for _, r := range resources(st) {
				k, _ := json.Marshal(r)
				key := string(k)
				if c, ok := st["Condition"]; ok {
					cj, _ := json.Marshal(c)
					key += " if " + string(cj)
				}
				if out[key] == nil {
					out[key] = map[string]bool{}
				}
				for _, a := range Actions(st) {
					out[key][a] = true
				}
			}
		}
	}
	return out
}

// resources returns a statement's resources.
func resources(st map[string]any) []any {
	if rs, ok := st["Resource"].([]any); ok {
		return rs
	}
	return []any{st["Resource"]}
}

// MustPanic runs f and returns what it panicked with, failing if it did not panic.
func MustPanic(t testing.TB, f func()) (v any) {
	t.Helper()
	defer func() { v = recover() }()
	f()
	t.Fatal("did not panic")
	return nil
}

// PanicText returns a panic value's message.
func PanicText(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// Lint runs AWS's CloudFormation linter, cfn-lint (the version localstack/requirements.lock pins,
// in the venv make test installs under root), with infra/.cfnlintrc on templates, and returns its
// findings, one a line.
func Lint(t testing.TB, root string, templates ...string) []string {
	t.Helper()
	lint := filepath.Join(root, ".venv", "bin", "cfn-lint")
	_, err := os.Stat(lint)
	require.NoError(t, err, "cfn-lint is not installed: make setup installs it (localstack/requirements.lock)")
	cfg := filepath.Join(root, "infra", ".cfnlintrc")
	out, err := exec.Command(lint, append([]string{"--config-file", cfg, "--format", "parseable", "--"}, templates...)...).CombinedOutput()
	var findings []string
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			findings = append(findings, line)
		}
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("cfn-lint: %v\n%s", err, out)
	}
	if err != nil && len(findings) == 0 {
		t.Fatalf("cfn-lint failed without a finding: %v", err)
	}
	return findings
}

// WriteFile writes tpl as JSON into dir as <name>.template.json and returns the path.
func (tpl Template) WriteFile(t testing.TB, dir, name string) string {
	t.Helper()
	raw, err := json.Marshal(tpl)
	require.NoError(t, err)
	path := filepath.Join(dir, name+".template.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}
