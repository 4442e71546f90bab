package constructs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOutdirResolvesAgainstCDKJSON(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	infra := filepath.Join(root, "infra")
	if err := os.MkdirAll(infra, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cdk.json"), []byte(`{"app": "cd infra && go run ."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "elsewhere")
	for _, tc := range []struct{ name, wd, env, want string }{
		{"cli relative", infra, "cdk.out", filepath.Join(root, "cdk.out")},
		{"cli other output", infra, "build/asm", filepath.Join(root, "build", "asm")},
		{"cli absolute", infra, abs, abs},
		{"plain go run", infra, "", filepath.Join(root, "cdk.out")},
		{"at the root", root, "cdk.out", filepath.Join(root, "cdk.out")},
	} {
		if got := outdirFrom(tc.wd, tc.env); got != tc.want {
			t.Errorf("%s: outdirFrom(%s, %q) = %s, want %s", tc.name, tc.wd, tc.env, got, tc.want)
		}
	}
}

func TestOutdirReadsCDKJSONOutput(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cdk.json"), []byte(`{"app": "go run .", "output": "out/asm"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := outdirFrom(root, ""), filepath.Join(root, "out", "asm"); got != want {
		t.Errorf("outdirFrom = %s, want %s", got, want)
	}
}
