package lambdaruntime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Build compiles the Go main package in pkgDir into the executable out, for this machine's OS and
// architecture, with the flags a provided.al2023 bootstrap is built with (CGO off, the lambda.norpc
// tag, -trimpath). The go command comes from PATH.
func Build(ctx context.Context, pkgDir, out string) error {
	return BuildPackage(ctx, pkgDir, ".", out)
}

// BuildPackage is Build of the main package pkg as the go command names it in dir: "." or
// "./functions/email", or an import path ("github.com/jobkit-go/jobkit/cmd/jobkit-recorder"),
// built with the version dir's module requires.
func BuildPackage(ctx context.Context, dir, pkg, out string) error {
	what := filepath.Join(dir, pkg)
	if pkg != "." && !strings.HasPrefix(pkg, "./") {
		what = pkg + " in " + dir
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w", what, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", absOut, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w\n%s", what, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// Builds builds each Go main package at most once and keeps the executables, for tests that run
// one function binary in many cases: the first Path of a package builds it (with Build), later
// calls for it, from any goroutine, wait for that build and return its result. The zero value is
// ready to use; Remove deletes what was built (a test binary's TestMain calls it after m.Run).
type Builds struct {
	mu    sync.Mutex
	dir   string                  // one temporary directory for every executable, made on the first build
	byDir map[string]*cachedBuild // by absolute package folder
}

// cachedBuild is one package's build, done once.
type cachedBuild struct {
	once sync.Once
	path string
	err  error
}

// Path returns the executable of the Go main package in pkgDir, named bootstrap, building it on
// the first call.
// A failed build is not retried: every call for pkgDir returns its error. ctx bounds the build.
func (b *Builds) Path(ctx context.Context, pkgDir string) (string, error) {
	abs, err := filepath.Abs(pkgDir)
	if err != nil {
		return "", fmt.Errorf("lambdaruntime: build %s: %w", pkgDir, err)
	}
	cb, err := b.entry(abs)
	if err != nil {
		return "", fmt.Errorf("lambdaruntime: build %s: %w", pkgDir, err)
	}
	cb.once.Do(func() { cb.err = Build(ctx, abs, cb.path) })
	return cb.path, cb.err
}

// entry returns the build of the package in dir, adding it when new.
func (b *Builds) entry(dir string) (*cachedBuild, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.byDir[dir]; ok {
		return cb, nil
	}
	if b.dir == "" {
		tmp, err := os.MkdirTemp("", "lambdaruntime-builds-")
		if err != nil {
			return nil, err
		}
		b.dir, b.byDir = tmp, map[string]*cachedBuild{}
	}
	// A folder per package: each executable is named bootstrap, as Lambda runs it.
	n := strconv.Itoa(len(b.byDir))
	cb := &cachedBuild{path: filepath.Join(b.dir, n, "bootstrap")}
	b.byDir[dir] = cb
	return cb, nil
}

// Remove deletes every executable built so far. Later calls of Path build again.
func (b *Builds) Remove() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	dir := b.dir
	b.dir, b.byDir = "", nil
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}
