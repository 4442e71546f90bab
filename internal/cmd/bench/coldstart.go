package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The cold start benchmark starts a function process the way Lambda does (the lambdaruntime
// package: a fresh process with the Lambda environment and its own Runtime API server) and measures
// from just before the exec to the moment the process asks invocation/next for its first event —
// everything Lambda bills as the init phase, plus the exec.
//
//   - jobkit: the sample stack's email function (functions/email: jobs runtime, DynamoDB
//     idempotency middleware, SDK clients), built as a provided.al2023 bootstrap is: CGO_ENABLED=0,
//     -tags lambda.norpc, -trimpath, -ldflags="-s -w", for this machine's architecture.
//   - Powertools: powertools/handler.py (batch, parser, idempotency with a DynamoDB persistence
//     layer, created at import as a real function does), run by powertools/bootstrap.py, a minimal
//     Python runtime loop whose own imports count too; the interpreter is the venv's.
//
// Each side gets one untimed start (page cache), then coldStarts timed starts, alternating sides so
// both see the same machine load. Each start is invoked once with an empty SQS event and must
// answer it. Times are medians; the speedup is the median of the pairs' ratios, with its spread.
//
//	cold_start_ms                       jobkit: exec → first invocation/next
//	powertools_cold_start_ms            Powertools: python exec → first invocation/next
//	cold_start_speedup_vs_powertools    powertools / jobkit (and _spread)
//	bootstrap_bytes                     the email function built for linux/arm64 (what deploys)
//	bootstrap_host_bytes                the same for this machine (what was timed)
func init() {
	register("coldstart", 40, benchColdStart)
}

const coldStarts = 11

func benchColdStart(ctx context.Context, emit func(string, any)) error {
	root, python, dir, err := peerWorkdir("coldstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	emailPkg := filepath.Join(root, "functions", "email")
	goBootstrap := filepath.Join(dir, "email", "bootstrap")
	if err := buildBootstrap(ctx, emailPkg, goBootstrap, runtime.GOARCH); err != nil {
		return err
	}
	armBootstrap := filepath.Join(dir, "email-arm64", "bootstrap")
	if err := buildBootstrap(ctx, emailPkg, armBootstrap, "arm64"); err != nil {
		return err
	}
	pyBootstrap, err := pythonTaskRoot(filepath.Join(dir, "powertools"), python, peerDir(root))
	if err != nil {
		return err
	}

	opts := lambdaruntime.Options{Endpoint: awstest.Endpoint(), InitTimeout: 30 * time.Second}
	goFn := lambdaruntime.Function{
		Name:      "jobkit-email",
		Bootstrap: goBootstrap,
		Timeout:   10 * time.Second,
		Env: map[string]string{
			contract.EnvQueueURL:         "http://127.0.0.1/000000000000/jobkit-bench-email",
			contract.EnvDLQURL:           "http://127.0.0.1/000000000000/jobkit-bench-email-dlq",
			contract.EnvIdempotencyTable: "jobkit-bench-idempotency",
		},
	}
	pyFn := lambdaruntime.Function{
		Name:      "powertools-email",
		Bootstrap: pyBootstrap,
		Handler:   "handler.idempotent_handler",
		Timeout:   10 * time.Second,
		Env:       map[string]string{"IDEMPOTENCY_TABLE": "jobkit-bench-idempotency"},
	}

	var goMS, pyMS []float64
	for i := -1; i < coldStarts; i++ { // i = -1: the untimed start
		g, err := coldStart(ctx, goFn, opts)
		if err != nil {
			return err
		}
		p, err := coldStart(ctx, pyFn, opts)
		if err != nil {
			return err
		}
		if i >= 0 {
			goMS, pyMS = append(goMS, durationMS(g)), append(pyMS, durationMS(p))
		}
	}
	emit("cold_start_ms", median(goMS))
	emit("powertools_cold_start_ms", median(pyMS))
	emitRatio(emit, "cold_start_speedup_vs_powertools", pyMS, goMS)
	for _, b := range []struct{ key, path string }{{"bootstrap_bytes", armBootstrap}, {"bootstrap_host_bytes", goBootstrap}} {
		st, err := os.Stat(b.path)
		if err != nil {
			return err
		}
		emit(b.key, st.Size())
	}
	return nil
}

func durationMS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// buildBootstrap builds the Go main package in pkgDir for linux/arch as a provided.al2023
// bootstrap: static, no RPC shim, no paths or symbols.
func buildBootstrap(ctx context.Context, pkgDir, out, arch string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s for linux/%s: %w\n%s", pkgDir, arch, err, b)
	}
	return nil
}

// pythonTaskRoot lays out a Python function as Lambda unpacks one: the handler module in the task
// root, and a bootstrap executable (the runtime loop, run by python). It returns the bootstrap.
func pythonTaskRoot(dir, python, src string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	handler, err := os.ReadFile(filepath.Join(src, "handler.py"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "handler.py"), handler, 0o644); err != nil {
		return "", err
	}
	loop, err := os.ReadFile(filepath.Join(src, "bootstrap.py"))
	if err != nil {
		return "", err
	}
	bootstrap := filepath.Join(dir, "bootstrap")
	script := append([]byte("#!"+python+"\n"), loop...)
	if err := os.WriteFile(bootstrap, script, 0o755); err != nil {
		return "", err
	}
	return bootstrap, nil
}

// coldStart starts fn in a fresh execution environment, invokes it once with an empty SQS event and
// returns the time from the start to its first invocation/next: the invoke's wall time less the
// invocation itself (from the hand-out of the event to the answer).
func coldStart(ctx context.Context, fn lambdaruntime.Function, opts lambdaruntime.Options) (time.Duration, error) {
	var out bytes.Buffer
	opts.Output = &out
	rt, err := lambdaruntime.New(fn, &opts)
	if err != nil {
		return 0, err
	}
	defer rt.Close()
	start := time.Now()
	res, err := rt.Invoke(ctx, []byte(`{"Records":[]}`))
	total := time.Since(start)
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("cold start of %s: %w\n%s", fn.Name, err, out.Bytes())
	}
	if !bytes.Contains(res.Payload, []byte("batchItemFailures")) {
		return 0, fmt.Errorf("cold start of %s: unexpected answer %s", fn.Name, res.Payload)
	}
	return total - res.Duration, nil
}
