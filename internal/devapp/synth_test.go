package devapp_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/internal/devapp"
)

// fakeRepo writes a repository shaped like jobkit's: the library module with two packages, of
// which the CDK app in infra/ (its own module) imports one.
func fakeRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":             "module github.com/jobkit-go/jobkit\n\ngo 1.22\n",
		"cdk.json":           `{"app": "go run ./infra"}`,
		"used/used.go":       "package used\n\nconst Name = \"used\"\n",
		"used/used_test.go":  "package used\n",
		"unused/unused.go":   "package unused\n",
		"infra/go.mod":       "module github.com/jobkit-go/jobkit/infra\n\ngo 1.22\n\nrequire github.com/jobkit-go/jobkit v0.0.0\n\nreplace github.com/jobkit-go/jobkit => ../\n",
		"infra/go.sum":       "",
		"infra/main.go":      "package main\n\nimport \"github.com/jobkit-go/jobkit/used\"\n\nfunc main() { println(used.Name) }\n",
		"cdk.out/.gitignore": "",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return root
}

func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	require.NoError(t, os.Chtimes(path, at, at))
}

// cdk.out is synthesized again when it is missing or older than a source of the CDK app: infra/,
// the library packages it imports, cdk.json, the go.mod files; not when other code changes.
func TestSynthReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := fakeRepo(t)
	out := filepath.Join(root, "cdk.out")
	reason, err := devapp.SynthReason(ctx, root, out)
	require.NoError(t, err)
	require.Contains(t, reason, "no cloud assembly")

	manifest := filepath.Join(out, "manifest.json")
	require.NoError(t, os.WriteFile(manifest, []byte("{}"), 0o644))
	now := time.Now()
	touch(t, manifest, now)
	past := now.Add(-time.Hour)
	for _, f := range []string{"go.mod", "cdk.json", "used/used.go", "used/used_test.go", "unused/unused.go", "infra/go.mod", "infra/go.sum", "infra/main.go"} {
		touch(t, filepath.Join(root, f), past)
	}
	reason, err = devapp.SynthReason(ctx, root, out)
	require.NoError(t, err)
	require.Empty(t, reason, "up to date")

	later := now.Add(time.Minute)
	for _, f := range []string{"unused/unused.go", "used/used_test.go"} {
		touch(t, filepath.Join(root, f), later)
		reason, err = devapp.SynthReason(ctx, root, out)
		require.NoError(t, err)
		require.Empty(t, reason, "%s is not a source of the app", f)
	}
	for _, f := range []string{"used/used.go", "infra/main.go", "cdk.json", "infra/go.sum"} {
		touch(t, filepath.Join(root, f), later)
		reason, err = devapp.SynthReason(ctx, root, out)
		require.NoError(t, err)
		require.Contains(t, reason, filepath.FromSlash(f), "%s is a source of the app", f)
		touch(t, filepath.Join(root, f), past)
	}

	// A CDK app that does not compile: its sources cannot be listed.
	require.NoError(t, os.WriteFile(filepath.Join(root, "infra", "main.go"), []byte("package main\n\nimport \"github.com/jobkit-go/jobkit/missing\"\n"), 0o644))
	_, err = devapp.SynthReason(ctx, root, out)
	require.Error(t, err)
}

func TestModuleRoot(t *testing.T) {
	t.Parallel()
	root := fakeRepo(t)
	got, err := devapp.ModuleRoot(filepath.Join(root, "infra"))
	require.NoError(t, err, "infra's own go.mod is another module")
	require.Equal(t, root, got)
	_, err = devapp.ModuleRoot(t.TempDir())
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}
