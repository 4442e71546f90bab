package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// repoRoot returns the root of the jobkit module: the nearest directory at or above the working
// directory whose go.mod declares it. `make bench` and `go run ./internal/cmd/bench` run from there.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/jobkit-go/jobkit\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the jobkit module: run from the repository")
		}
		dir = parent
	}
}

// peerPython returns the Python interpreter the Powertools peer runs on: JOBKIT_PYTHON, or the
// repository's venv (`make setup` installs it from localstack/requirements.txt).
func peerPython(root string) (string, error) {
	py := os.Getenv("JOBKIT_PYTHON")
	if py == "" {
		py = filepath.Join(root, ".venv", "bin", "python")
	}
	abs, err := exec.LookPath(py)
	if err != nil {
		return "", fmt.Errorf("python for the Powertools peer: %w (run `make setup` or set JOBKIT_PYTHON)", err)
	}
	out, err := exec.Command(abs, "-c", "import aws_lambda_powertools, pydantic, boto3").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s lacks aws-lambda-powertools, pydantic or boto3 (pip install -r localstack/requirements.txt): %w\n%s", abs, err, out)
	}
	return abs, nil
}

// peerDir is where the Powertools peer's Python files live.
func peerDir(root string) string {
	return filepath.Join(root, "internal", "cmd", "bench", "powertools")
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// peerWorkdir returns what a benchmark against the Python peer needs: the repository root, the
// peer's Python and a fresh temporary directory for bench, which the caller removes.
func peerWorkdir(bench string) (root, python, dir string, err error) {
	if root, err = repoRoot(); err != nil {
		return "", "", "", err
	}
	if python, err = peerPython(root); err != nil {
		return "", "", "", err
	}
	dir, err = os.MkdirTemp("", "jobkit-bench-"+bench+"-")
	return root, python, dir, err
}
