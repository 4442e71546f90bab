package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// devProgram is the package `jobkit dev` runs: the offline stack and its demo workload live in a
// program of their own, so that this CLI links no emulator code.
const devProgram = "./internal/cmd/dev"

// libraryModule is the module whose repository holds devProgram.
const libraryModule = "github.com/jobkit-go/jobkit"

func newDevCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "dev [flags]",
		Short: "Run the sample stack offline with a demo workload (what `make dev` runs)",
		Long: `dev runs jobkit's sample stack on this machine, with no AWS account and no Docker. It is
the program internal/cmd/dev of the jobkit repository the working directory is in (built into
.run/bin); every flag goes to it ('jobkit dev --help' lists them).`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := devRoot(args)
			if err != nil {
				return err
			}
			bin := filepath.Join(root, ".run", "bin", "jobkit-dev")
			build := exec.CommandContext(cmd.Context(), "go", "build", "-o", bin, devProgram)
			build.Dir, build.Stdout, build.Stderr = root, cmd.ErrOrStderr(), cmd.ErrOrStderr()
			if err := build.Run(); err != nil {
				return fmt.Errorf("dev: build %s: %w", devProgram, err)
			}
			run := exec.CommandContext(cmd.Context(), bin, devArgs(a, args)...)
			run.Dir = root
			run.Stdin, run.Stdout, run.Stderr = a.stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = run.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return devExit{exit.ExitCode()}
			}
			return err
		},
	}
}

// devExit carries the dev program's exit code; it has already said why.
type devExit struct{ code int }

func (e devExit) Error() string { return fmt.Sprintf("dev exited with %d", e.code) }

// devArgs passes the CLI's --endpoint and --region on to the dev program, ahead of its own flags.
func devArgs(a *app, args []string) []string {
	var out []string
	if a.endpoint != "" {
		out = append(out, "--endpoint", a.endpoint)
	}
	if a.region != "" {
		out = append(out, "--region", a.region)
	}
	return append(out, args...)
}

// devRoot returns the jobkit repository dev runs in: --root when given, else the directory above
// the working directory whose go.mod declares the jobkit module.
func devRoot(args []string) (string, error) {
	for i, arg := range args {
		if v, ok := strings.CutPrefix(arg, "--root="); ok {
			return v, nil
		}
		if arg == "--root" && i+1 < len(args) {
			return args[i+1], nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if declaresModule(filepath.Join(dir, "go.mod"), libraryModule) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("dev: no jobkit repository above the working directory (run it inside one, or pass --root)")
		}
		dir = parent
	}
}

func declaresModule(gomod, module string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.TrimSpace(m) == module
		}
	}
	return false
}
