package lambdaruntime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build compiles the Go main package in pkgDir into the executable out, for this machine's OS and
// architecture, with the flags a provided.al2023 bootstrap is built with (CGO off, the lambda.norpc
// tag, -trimpath). The go command comes from PATH.
func Build(ctx context.Context, pkgDir, out string) error {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w", pkgDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w", pkgDir, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", absOut, ".")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lambdaruntime: build %s: %w\n%s", pkgDir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}
