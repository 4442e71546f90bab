package constructs

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Outdir returns the directory a CDK app should write its cloud assembly to, as an absolute
// path, so that `cdk synth` finds it whatever directory the app runs in. Pass it to
// awscdk.NewApp:
//
//	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(constructs.Outdir())})
//
// The CDK CLI runs the app's command (cdk.json's "app") from the directory of cdk.json and passes
// the output directory in CDK_OUTDIR, relative to that directory; a command such as
// "cd infra && go run ." then runs the app in another directory, where a relative CDK_OUTDIR
// would name infra/cdk.out, which the CLI never reads. Outdir resolves a relative CDK_OUTDIR
// against the nearest directory at or above the working directory that holds a cdk.json. Run
// without the CLI (go run .), it returns that cdk.json's "output" (default cdk.out) in the same
// directory, so a plain run writes where `cdk synth` does. With no cdk.json above, CDK_OUTDIR or
// cdk.out is taken relative to the working directory.
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
