// Package deploytest gives the offline stack's tests the deploy package's test assembly (a state
// stack, and a workers stack with a Go function on a job queue and a schedule), copied for each
// test to edit.
package deploytest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/jobkit-go/jobkit/offline/deploy"
)

// Assembly copies the test assembly into dir (a new temporary directory when dir is "") and
// returns dir. edit, when not nil, is applied to each stack's template, by the stack's name.
func Assembly(tb testing.TB, dir string, edit func(stack string, tpl map[string]any)) string {
	tb.Helper()
	src := filepath.Join(moduleRoot(tb), "offline", "deploy", "testdata", "assembly")
	if dir == "" {
		dir = tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if stack, ok := strings.CutSuffix(e.Name(), ".template.json"); ok && edit != nil {
			var tpl map[string]any
			if err := json.Unmarshal(raw, &tpl); err != nil {
				tb.Fatalf("deploytest: %s: %v", e.Name(), err)
			}
			edit(stack, tpl)
			if raw, err = json.Marshal(tpl); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), raw, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// moduleRoot is the directory of the go.mod above the test's working directory (its package's).
func moduleRoot(tb testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("deploytest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Resource returns resource id of tpl's Resources (for an edit to change).
func Resource(tpl map[string]any, id string) map[string]any {
	return tpl["Resources"].(map[string]any)[id].(map[string]any)
}

// Deploy deploys opts onto cfg's endpoint (deploy.Deploy) and fails tb if that fails; what it
// deployed, even in part, is destroyed when the test ends.
func Deploy(tb testing.TB, cfg aws.Config, opts *deploy.Options) *deploy.Deployment {
	tb.Helper()
	d, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), opts)
	if d != nil {
		tb.Cleanup(func() { _ = d.Destroy(context.Background()) })
	}
	if err != nil {
		tb.Fatalf("deploytest: deploy: %v", err)
	}
	return d
}
