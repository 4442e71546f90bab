package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"text/template"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/mod/module"
)

// scaffold holds the templates `jobkit init` writes: each file's path without ".tmpl" (and
// gitignore as .gitignore).
//
//go:embed scaffold
var scaffold embed.FS

// initOptions are the flags of `jobkit init`.
type initOptions struct {
	module  string
	fifo    bool
	jobkit  string
	version string
	noTidy  bool
}

// scaffoldData is what the templates see.
type scaffoldData struct {
	Name    string // the directory's name
	Module  string // the service's module path
	Stack   string // the CloudFormation stack
	FIFO    bool
	Version string // the jobkit version required
	Replace string // a jobkit checkout for replace directives ("" after a release)
}

// CDKVersion is the CDK CLI the scaffold's Makefile runs through npx when no cdk is on PATH: the
// version jobkit's own tools pin (infra/tools/package.json; a test keeps them equal).
func (scaffoldData) CDKVersion() string { return cdkCLIVersion }

const cdkCLIVersion = "2.1148.1"

// ExistsError reports that `jobkit init` was pointed at a directory that already holds files.
type ExistsError struct{ Dir string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("init: %s exists and is not empty (jobkit init writes a new service)", e.Dir)
}

func newInitCmd() *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init <dir>",
		Short: "Write a new service: a job, its Lambda worker, a producer and a one-stack CDK app",
		Long: `init writes a working service skeleton into <dir> (which must be new or empty), as
'cdk init' does: go.mod (requiring jobkit, with the jobkit CLI as a tool), the job welcome.send
with its worker and tests (jobstest), the Lambda main (functions/welcome), a producer
(cmd/producer), infra/ (its own go.mod: one stack with JobQueue, IdempotencyTable and Worker,
checked by cdk-nag), cdk.json, a Makefile (dev, produce, test, synth, deploy) and a README. It then
runs 'go mod tidy' in both modules (--no-tidy skips it).

Before a tagged release of jobkit, pass --jobkit <checkout> (default: the checkout the working
directory is in, when this CLI was built from one): both go.mod files get replace directives to
it. After one, the version this CLI was built from is required (--version picks another).`,
		Example: `  jobkit init ./greeter --module example.com/greeter
  jobkit init ./orders --fifo --jobkit ~/src/jobkit   # before a release: jobkit from a checkout`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("init takes one directory, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := o.data(args[0])
			if err != nil {
				return err
			}
			if err := writeScaffold(args[0], data); err != nil {
				return err
			}
			if !o.noTidy {
				for _, dir := range []string{args[0], filepath.Join(args[0], "infra")} {
					tidy := exec.CommandContext(cmd.Context(), "go", "mod", "tidy")
					tidy.Dir, tidy.Stdout, tidy.Stderr = dir, cmd.ErrOrStderr(), cmd.ErrOrStderr()
					if err := tidy.Run(); err != nil {
						return fmt.Errorf("init: go mod tidy in %s: %w", dir, err)
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (module %s, stack %s)\nnext: cd %s && make test && make dev\n", args[0], data.Module, data.Stack, args[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.module, "module", "", "the service's module path; default the directory's name")
	f.BoolVar(&o.fifo, "fifo", false, "a FIFO job queue (jobs of one message group in order)")
	f.StringVar(&o.jobkit, "jobkit", "", "a jobkit checkout to use through replace directives (before a tagged release)")
	f.StringVar(&o.version, "version", "", "the jobkit version to require; default the version of this CLI")
	f.BoolVar(&o.noTidy, "no-tidy", false, "do not run go mod tidy")
	return cmd
}

// data returns the templates' data for a service in dir.
func (o *initOptions) data(dir string) (scaffoldData, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return scaffoldData{}, err
	}
	name := filepath.Base(abs)
	// The name and paths go into a Makefile, go.mod files, Go and Markdown: a control character
	// (a newline, say) would write lines of its own there, such as a recipe `make` runs.
	if hasControl(name) {
		return scaffoldData{}, usageError{fmt.Errorf("directory name %q has a control character", name)}
	}
	d := scaffoldData{Name: name, Module: o.module, Stack: stackName(name), FIFO: o.fifo}
	if d.Module == "" {
		d.Module = strings.ToLower(name)
	}
	if err := module.CheckImportPath(d.Module); err != nil {
		what := "--module"
		if o.module == "" {
			what = "the directory's name (give --module)"
		}
		return d, usageError{fmt.Errorf("%s %q is not a module path: %w", what, d.Module, err)}
	}
	switch {
	case o.jobkit != "":
		if d.Replace, err = filepath.Abs(o.jobkit); err != nil {
			return d, err
		}
		if hasControl(d.Replace) || strings.ContainsAny(d.Replace, " \t\"'`") {
			return d, usageError{fmt.Errorf("--jobkit %q: a path with spaces, quotes or control characters cannot stand in go.mod", d.Replace)}
		}
		if !declaresModule(filepath.Join(d.Replace, "go.mod"), libraryModule) {
			return d, usageError{fmt.Errorf("--jobkit %s is not a jobkit checkout (no go.mod of %s)", o.jobkit, libraryModule)}
		}
		d.Version = "v0.0.0"
	case o.version != "":
		if !isSemver(o.version) {
			return d, usageError{fmt.Errorf("--version %q is not a semantic version (v1.2.3)", o.version)}
		}
		d.Version = o.version
	default:
		if d.Version = ownVersion(); d.Version != "" {
			break
		}
		// A CLI built from a checkout (go run ./cmd/jobkit init ...): that checkout, when the
		// working directory is in it.
		if root := checkoutRoot(); root != "" {
			d.Replace, d.Version = root, "v0.0.0"
			break
		}
		return d, usageError{errors.New("this jobkit CLI was built from a checkout, not a release: pass --jobkit <checkout> (replace directives) or --version vX.Y.Z")}
	}
	return d, nil
}

// checkoutRoot returns the jobkit checkout the working directory is in, or "".
func checkoutRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if declaresModule(filepath.Join(dir, "go.mod"), libraryModule) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// ownVersion returns the jobkit release this CLI was built from, or "" (a checkout).
func ownVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if info.Main.Path == libraryModule && isSemver(info.Main.Version) {
		return info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == libraryModule && dep.Replace == nil && isSemver(dep.Version) {
			return dep.Version
		}
	}
	return ""
}

// stackName turns a directory name into a CloudFormation stack name: "order-mailer" is
// "OrderMailer".
func stackName(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) && r < unicode.MaxASCII, unicode.IsDigit(r) && b.Len() > 0:
			if up {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	if b.Len() == 0 {
		return "Service"
	}
	return b.String()
}

// writeScaffold writes the templates into dir, which must not hold files yet.
func writeScaffold(dir string, data scaffoldData) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return &ExistsError{Dir: dir}
	}
	return fs.WalkDir(scaffold, "scaffold", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		raw, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		tpl, err := template.New(p).Parse(string(raw))
		if err != nil {
			return fmt.Errorf("init: template %s: %w", p, err)
		}
		var out bytes.Buffer
		if err := tpl.Execute(&out, data); err != nil {
			return fmt.Errorf("init: template %s: %w", p, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "scaffold/"), ".tmpl")
		if path.Base(rel) == "gitignore" {
			rel = path.Join(path.Dir(rel), ".gitignore")
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, out.Bytes(), 0o644)
	})
}

// semverRE matches a module version as the go command writes it: v1.2.3, v1.2.3-pre, v0.0.0-date-hash.
var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func isSemver(v string) bool { return semverRE.MatchString(v) }

// hasControl reports whether s holds a control character (C0, DEL or C1).
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
