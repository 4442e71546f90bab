package deploy

import (
	"cmp"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// build gives each function a bootstrap that runs on this machine, or says in Unrunnable (and
// Deployment.Skipped) why it cannot: it builds, runs or skips every function it can and fails
// only when a container does not build. The synthesized asset is built
// for Lambda (linux/arm64 as a rule), which need not run here, so a function whose "jobkit:source"
// metadata names its Go main package (a folder of its module, or an import path) is built from it
// for this machine; one without that metadata runs its asset as is, if the asset is an executable
// for this machine.
func (dp *deployer) build(ctx context.Context, cdkOut string) error {
	for i := range dp.d.Functions {
		fn := &dp.d.Functions[i]
		out := filepath.Join(dp.o.BuildDir, fn.Stack, fn.LogicalID, "bootstrap")
		source := fn.Source
		if source == "" {
			source = dp.o.Sources[fn.LogicalID] // a function without metadata, mapped by its logical id
		}
		if source == "" && lambdaruntime.Interpreted(fn.Runtime) && fn.AssetPath != "" {
			// Node.js and Python: the asset is the code, run by this machine's interpreter.
			boot, err := lambdaruntime.InterpretedBootstrap(fn.Runtime, filepath.Dir(out))
			if err != nil {
				fn.Unrunnable = err.Error() + "; its event sources are not polled, so their messages wait in their queues"
				dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: fn.Stack, LogicalID: fn.LogicalID, Type: typeFunction, Reason: fn.Unrunnable})
				continue
			}
			fn.Bootstrap, fn.TaskRoot = boot, filepath.Join(cdkOut, fn.AssetPath)
			continue
		}
		if source == "" {
			asset := filepath.Join(cdkOut, fn.AssetPath, "bootstrap")
			if reason := unrunnable(fn, asset); reason != "" {
				fn.Unrunnable = reason
				dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: fn.Stack, LogicalID: fn.LogicalID, Type: typeFunction, Reason: reason})
				dp.log.Warn("function cannot run here: skipped", "function", fn.Name, "reason", reason)
				continue
			}
			fn.Bootstrap = asset
			continue
		}
		start := time.Now()
		fn.ModuleDir = cmp.Or(fn.ModuleDir, dp.o.ModuleDir)
		if err := buildBootstrap(ctx, fn.ModuleDir, dp.o.sourceDir(source), out); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One function that does not build is skipped, as one that cannot run here is:
			// the rest of the app runs.
			fn.Unrunnable = fmt.Sprintf("its Go package %s did not build (%v); fix the build and deploy again: "+
				"its event sources are not polled, so their messages wait in their queues", source, err)
			dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: fn.Stack, LogicalID: fn.LogicalID, Type: typeFunction, Reason: fn.Unrunnable})
			dp.log.Warn("function did not build: skipped", "function", fn.Name, "source", source, "error", err)
			continue
		}
		fn.Bootstrap = out
		dp.log.Info("function built", "function", fn.Name, "source", source, "bootstrap", out, "duration_ms", time.Since(start).Milliseconds())
	}
	for i := range dp.d.Containers {
		c := &dp.d.Containers[i]
		out := filepath.Join(dp.o.BuildDir, c.Stack, c.LogicalID, c.Name)
		start := time.Now()
		c.ModuleDir = cmp.Or(c.ModuleDir, dp.o.ModuleDir)
		if err := buildBootstrap(ctx, c.ModuleDir, dp.o.sourceDir(c.Source), out); err != nil {
			return &ConfigError{Stack: c.Stack, LogicalID: c.LogicalID, Reason: err.Error()}
		}
		c.Binary = out
		dp.log.Info("container built", "container", c.LogicalID+"/"+c.Name, "source", c.Source, "binary", out, "duration_ms", time.Since(start).Milliseconds())
	}
	return nil
}

// unrunnable says why fn, which has no Go source to build from, cannot run its synthesized asset
// on this machine, and what to do; "" when it can.
func unrunnable(fn *Function, asset string) string {
	goRuntime := fn.Runtime == "" || strings.HasPrefix(fn.Runtime, "provided") || strings.HasPrefix(fn.Runtime, "go")
	switch {
	case lambdaruntime.Interpreted(fn.Runtime):
		return "no asset: nothing to run (its code is the asset the CDK bundles)"
	case !goRuntime:
		return fmt.Sprintf("runtime %s does not run offline: Go (a provided runtime with a Go bootstrap), Node.js and Python functions do; "+
			"its event sources are not polled, so their messages wait in their queues", fn.Runtime)
	case fn.AssetPath == "":
		return "no " + SourceMetadataKey + " metadata and no asset: nothing to run; name its Go main package with " +
			"--source " + fn.LogicalID + "=<package> (a folder of --module, or an import path)"
	}
	if err := checkRunnable(asset); err != nil {
		return "no " + SourceMetadataKey + " metadata to build from, and its asset cannot run here (" + err.Error() + "); name its Go main package with " +
			"--source " + fn.LogicalID + "=<package> (a folder of --module, or an import path) to build it for this machine"
	}
	return ""
}

// errNotExecutable is checkRunnable's answer for a directory or a file with no execute bit.
var errNotExecutable = errors.New("not an executable file")

// checkRunnable reports an error unless path is an executable file for this machine.
func checkRunnable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errNotExecutable
	}
	return checkArch(path)
}

// buildBootstrap builds the Go main package source of the module in moduleDir to out, as
// lambdaruntime builds a bootstrap for this machine: a folder of the module ("functions/email"),
// or an import path (contract.IsImportPath: a package of a module it requires, such as
// contract.RecorderPackage), built by that path in moduleDir, at the version its go.mod requires.
func buildBootstrap(ctx context.Context, moduleDir, source, out string) error {
	if contract.IsImportPath(source) {
		return lambdaruntime.BuildPackage(ctx, moduleDir, source, out)
	}
	return lambdaruntime.Build(ctx, filepath.Join(moduleDir, filepath.FromSlash(source)), out)
}

// checkArch reports an error unless path is an ELF executable for this machine.
func checkArch(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM}[runtime.GOARCH]
	if runtime.GOOS != "linux" || f.Machine != want {
		return fmt.Errorf("%s is built for %s, this machine is %s/%s", path, f.Machine, runtime.GOOS, runtime.GOARCH)
	}
	return nil
}
