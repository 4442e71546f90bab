package devapp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// libraryModule is the module path of the repository root.
const libraryModule = "github.com/jobkit-go/jobkit"

// SynthReason returns why the cloud assembly in cdkOut must be synthesized again from the CDK app
// of the repository at root — it is missing, or a source of the app (infra/, the library
// packages infra imports, cdk.json, go.mod files) is newer than it — or "" when it is up to date.
// Function code is not a source here: the offline stack builds each function from its package.
func SynthReason(ctx context.Context, root, cdkOut string) (string, error) {
	st, err := os.Stat(filepath.Join(cdkOut, "manifest.json"))
	if os.IsNotExist(err) {
		return cdkOut + " has no cloud assembly", nil
	}
	if err != nil {
		return "", err
	}
	built := st.ModTime()
	sources, err := synthSources(ctx, root)
	if err != nil {
		return "", err
	}
	for _, src := range sources {
		if st, err := os.Stat(src); err == nil && st.ModTime().After(built) {
			rel, _ := filepath.Rel(root, src)
			return fmt.Sprintf("%s changed after the last synth (%s)", rel, built.Format(time.TimeOnly)), nil
		}
	}
	return "", nil
}

// synthSources lists the files the synthesized templates depend on.
func synthSources(ctx context.Context, root string) ([]string, error) {
	files := []string{
		filepath.Join(root, "cdk.json"), filepath.Join(root, "go.mod"),
		filepath.Join(root, "infra", "go.mod"), filepath.Join(root, "infra", "go.sum"),
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}\t{{.Dir}}{{end}}", ".")
	cmd.Dir = filepath.Join(root, "infra")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("demo: list the CDK app's packages: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, dir, ok := strings.Cut(sc.Text(), "\t")
		if !ok || (path != libraryModule && !strings.HasPrefix(path, libraryModule+"/")) {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, filepath.Join(dir, n))
			}
		}
	}
	return files, nil
}

// Synth synthesizes the CDK app of the repository at root into <root>/cdk.out with
// infra/synth.sh (which installs the pinned CDK CLI under .tools on first use), writing its
// output to out.
func Synth(ctx context.Context, root string, out io.Writer) error {
	script := filepath.Join(root, "infra", "synth.sh")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("demo: synth: %w", err)
	}
	cmd := exec.CommandContext(ctx, script, "--quiet")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("demo: synth (%s): %w", script, err)
	}
	return nil
}

// EnsureSynth synthesizes <root>/cdk.out when SynthReason says so, and reports whether it did.
func EnsureSynth(ctx context.Context, root string, out io.Writer) (bool, error) {
	reason, err := SynthReason(ctx, root, filepath.Join(root, "cdk.out"))
	if err != nil {
		return false, err
	}
	if reason == "" {
		return false, nil
	}
	fmt.Fprintf(out, "synth: %s; synthesizing (about 30 s, a few minutes the first time)\n", reason)
	return true, Synth(ctx, root, out)
}

// ModuleRoot returns the nearest directory at or above dir whose go.mod declares jobkit's module.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok &&
					strings.Trim(strings.TrimSpace(rest), `"`) == libraryModule {
					return dir, nil
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("demo: no go.mod of module %s at or above the working directory: %w", libraryModule, fs.ErrNotExist)
		}
		dir = parent
	}
}
