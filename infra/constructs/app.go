package constructs

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// NewApp returns a CDK app that works from the directory of its cdk.json, as the CDK CLI does, so
// that a relative path means the same directory to the CLI, to this process and to the CDK
// library's own process: it changes the working directory to the nearest directory at or above
// it that holds a cdk.json, then creates the app, with props.Outdir, when unset, the cloud
// assembly directory the CLI reads (see Outdir). Call it before any other CDK call.
//
// The CLI runs the app's command (cdk.json's "app") from the directory of cdk.json and names
// the files it expects relative to it (CDK_OUTDIR, CDK_PERF_COUNTERS_FILE, CDK_ERROR_FILE); under
// a command such as "cd infra && go run ." they would otherwise land in infra/. Relative paths
// the app passes on, such as GoSource.ModuleDir, are then relative to the directory of cdk.json
// too. With no cdk.json above, the working directory stays.
func NewApp(props *awscdk.AppProps) awscdk.App {
	wd, err := os.Getwd()
	if err != nil {
		panic("jobkit: NewApp: " + err.Error())
	}
	if dir, _, ok := findCDKJSON(wd); ok && dir != wd {
		if err := os.Chdir(dir); err != nil {
			panic("jobkit: NewApp: " + err.Error())
		}
	}
	p := awscdk.AppProps{}
	if props != nil {
		p = *props
	}
	if p.Outdir == nil {
		p.Outdir = jsii.String(Outdir())
	}
	return awscdk.NewApp(&p)
}

// Outdir returns the directory, absolute, a CDK app writes its cloud assembly to so that
// `cdk synth` finds it: CDK_OUTDIR, which the CLI passes relative to the directory of cdk.json,
// resolved against the nearest directory at or above the working directory that holds a cdk.json;
// run without the CLI (go run .), that cdk.json's "output" (default cdk.out) in the same place.
// With no cdk.json above, CDK_OUTDIR or cdk.out is relative to the working directory.
func Outdir() string {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	return outdirFrom(wd, os.Getenv("CDK_OUTDIR"))
}

// outdirFrom is Outdir for the working directory wd and CDK_OUTDIR env.
func outdirFrom(wd, env string) string {
	if env != "" && filepath.IsAbs(env) {
		return filepath.Clean(env)
	}
	base, output := wd, "cdk.out"
	if dir, out, ok := findCDKJSON(wd); ok {
		base = dir
		if out != "" {
			output = out
		}
	}
	if env != "" {
		output = env
	}
	if filepath.IsAbs(output) {
		return filepath.Clean(output)
	}
	return filepath.Join(base, output)
}

// findCDKJSON returns the nearest directory at or above dir holding a cdk.json, and its "output".
func findCDKJSON(dir string) (found, output string, ok bool) {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "cdk.json")); err == nil {
			var cfg struct {
				Output string `json:"output"`
			}
			_ = json.Unmarshal(b, &cfg) // an unreadable cdk.json still marks the app's directory
			return dir, cfg.Output, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", false
		}
		dir = parent
	}
}
