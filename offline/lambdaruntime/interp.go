package lambdaruntime

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The Runtime API loops of the interpreted runtimes: Lambda runs Node.js and Python functions
// with runtimes of its own, which this machine has not; these do their part of it here.
//
//go:embed interp/node.mjs interp/python.py
var interpFS embed.FS

// Interpreters maps a Lambda runtime family to the command that runs its loop and the loop's file.
var interpreters = map[string]struct{ command, flags, loop string }{
	"nodejs": {"node", "", "interp/node.mjs"},
	"python": {"python3", "-u ", "interp/python.py"}, // unbuffered: a killed process's output is not lost
}

// Interpreted reports whether functions of a Lambda runtime ("nodejs20.x", "python3.12") run
// offline through InterpretedBootstrap.
func Interpreted(runtime string) bool {
	_, ok := interpreters[family(runtime)]
	return ok
}

func family(runtime string) string {
	return strings.TrimRight(strings.SplitN(runtime, ".", 2)[0], "0123456789")
}

// InterpretedBootstrap writes into dir a bootstrap that runs a function of runtime (a Node.js or
// Python runtime) as Lambda would: this machine's interpreter (node, python3 on PATH) running
// jobkit's Runtime API loop for it, which loads the handler _HANDLER names from the function's
// task root (Function.TaskRoot, its code). It returns the bootstrap's path, or an error that
// names what is missing.
func InterpretedBootstrap(runtime, dir string) (string, error) {
	in, ok := interpreters[family(runtime)]
	if !ok {
		return "", fmt.Errorf("lambdaruntime: runtime %s is not one this package interprets (Node.js, Python)", runtime)
	}
	bin, err := exec.LookPath(in.command)
	if err != nil {
		return "", fmt.Errorf("lambdaruntime: runtime %s needs %s on PATH: %w", runtime, in.command, err)
	}
	loop, err := interpFS.ReadFile(in.loop)
	if err != nil {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil { // the bootstrap runs in the function's code directory
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	loopPath := filepath.Join(dir, filepath.Base(in.loop))
	if err := os.WriteFile(loopPath, loop, 0o644); err != nil {
		return "", err
	}
	boot := filepath.Join(dir, "bootstrap")
	script := fmt.Sprintf("#!/bin/sh\nexec %s %s%s\n", shellQuote(bin), in.flags, shellQuote(loopPath))
	if err := os.WriteFile(boot, []byte(script), 0o755); err != nil {
		return "", err
	}
	return boot, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// taskRoot is TaskRoot, or the directory of Bootstrap.
func (f Function) taskRoot() string {
	if f.TaskRoot != "" {
		return f.TaskRoot
	}
	return filepath.Dir(f.Bootstrap)
}
