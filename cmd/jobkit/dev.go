package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// devProgram is the package `jobkit dev` runs in the jobkit repository: the sample stack and its
// demo workload. appProgram is the one it runs for a service's own CDK app: any cloud assembly,
// counting every job on every queue. Both live in programs of their own, so that this CLI links
// no emulator code; appProgram is built from the service's module, at the jobkit version it
// requires.
const (
	devProgram = "./internal/cmd/dev"
	appProgram = libraryModule + "/offline/cmd/jobkit-dev"
)

// libraryModule is the module whose repository holds devProgram.
const libraryModule = "github.com/jobkit-go/jobkit"

func newDevCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "dev [flags]",
		Short: "Run a CDK app offline: your service's, or jobkit's sample with a demo workload",
		Long: `dev runs a CDK app on this machine, with no AWS account and no Docker.

In a service of your own (a cdk.json at or above the working directory, a go.mod beside it that
requires ` + libraryModule + `), it builds ` + appProgram + ` from that module
into .run/bin and runs it: it synthesizes the app with its cdk.json when cdk.out is missing
(--synth always: every run; --cdk names the CDK CLI), deploys cdk.out onto the emulator
(--endpoint, default $AWS_ENDPOINT_URL, else http://127.0.0.1:4566), runs each function's real
binary behind its SQS event source mappings, prints the stacks' outputs as export lines (also in
.run/dev.env) for a producer to source, and runs until SIGINT or SIGTERM (--once: until the job
queues drain). It then prints a table per job queue and
  DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n> cancelled=<n>
counting every job on every queue it deployed. Its flags: --cdk-out DIR, --module DIR, --synth,
--cdk, --once, --timeout, --prefix, --keep, --function-logs, --env-file.

In the jobkit repository (or with --root), it runs the sample stack with a demo workload, as
'make dev' does (internal/cmd/dev; 'jobkit dev --help' there lists its flags).`,
		Example: `  # In a service made by 'jobkit init': synthesize, deploy, run until Ctrl-C
  jobkit dev
  # From another shell: send jobs to the running stack
  . .run/dev.env && go run ./cmd/producer`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if root, sample, err := devTarget(args); err != nil {
				return err
			} else if sample {
				return runDevProgram(cmd, a, root, devProgram, root, args)
			} else {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				return runDevProgram(cmd, a, root, appProgram, wd, args)
			}
		},
	}
}

// runDevProgram builds pkg in module dir into <dir>/.run/bin and runs it in workDir with args.
// SIGINT and SIGTERM reach it as a SIGTERM, so that it stops its stack and prints its summary.
func runDevProgram(cmd *cobra.Command, a *app, dir, pkg, workDir string, args []string) error {
	bin := filepath.Join(dir, ".run", "bin", "jobkit-dev")
	build := exec.CommandContext(cmd.Context(), "go", "build", "-o", bin, pkg)
	build.Dir, build.Stdout, build.Stderr = dir, cmd.ErrOrStderr(), cmd.ErrOrStderr()
	if err := build.Run(); err != nil {
		return fmt.Errorf("dev: build %s in %s: %w (a service's go.mod names it with a tool directive: "+
			"go get -tool %s@<jobkit version>; with no jobkit release yet, point the module at a jobkit checkout instead: "+
			"go mod edit -replace %s=<checkout> && go mod edit -tool=%s, as jobkit init --jobkit <checkout> writes)",
			pkg, dir, err, appProgram, libraryModule, appProgram)
	}
	run := exec.CommandContext(cmd.Context(), bin, devArgs(a, args)...)
	run.Dir = workDir
	run.Stdin, run.Stdout, run.Stderr = a.stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	run.Cancel = func() error { return run.Process.Signal(syscall.SIGTERM) }
	run.WaitDelay = 2 * time.Minute
	err := run.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return devExit{exit.ExitCode()}
	}
	if err != nil && cmd.Context().Err() != nil {
		return nil // stopped by a signal after it printed its summary
	}
	return err
}

// devTarget returns the module dev builds its program in, and whether it is the jobkit
// repository's sample: --root, or a working directory inside the jobkit repository, with neither
// --cdk-out nor --module, means the sample; otherwise the module is the directory of the nearest
// cdk.json (or the nearest go.mod) at or above the working directory.
func devTarget(args []string) (dir string, sample bool, err error) {
	appFlags := false
	for i, arg := range args {
		if v, ok := strings.CutPrefix(arg, "--root="); ok {
			return v, true, nil
		}
		if arg == "--root" && i+1 < len(args) {
			return args[i+1], true, nil
		}
		for _, f := range []string{"--cdk-out", "--module", "-cdk-out", "-module"} {
			if arg == f || strings.HasPrefix(arg, f+"=") {
				appFlags = true
			}
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false, err
	}
	var gomod string
	for d := wd; ; d = filepath.Dir(d) {
		if declaresModule(filepath.Join(d, "go.mod"), libraryModule) && !appFlags {
			return d, true, nil
		}
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil && fileExists(filepath.Join(d, "go.mod")) {
			return d, false, nil
		}
		if gomod == "" && fileExists(filepath.Join(d, "go.mod")) {
			gomod = d
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if gomod == "" {
		return "", false, errors.New("dev: no cdk.json or go.mod at or above the working directory: run it in your service (jobkit init makes one)")
	}
	return gomod, false, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
