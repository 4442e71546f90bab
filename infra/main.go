// Command infra is jobkit's sample CDK app: the stacks JobkitState (queues, dead-letter queues,
// tables) and JobkitWorkers (the sample functions, built from functions/ during synth, and a
// dashboard). Run it through the CDK CLI from the repository root (cdk.json):
//
//	cdk synth          # or: make synth
//	cdk deploy --all
//
// Run directly (cd infra && go run .), it works from the repository root too and writes the cloud
// assembly to <repo>/cdk.out.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/jsii-runtime-go"
)

// libraryModule is the module path of the repository root, which holds functions/.
const libraryModule = "github.com/jobkit-go/jobkit"

func main() {
	defer jsii.Close()
	root, err := findModuleRoot(libraryModule)
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	// Work from the repository root, as the CDK CLI does (cdk.json is there): a relative
	// CDK_OUTDIR then means the same directory to the CLI, to this process and to jsii's Node.js,
	// which starts with the first CDK call below.
	if err := os.Chdir(root); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	outdir := os.Getenv("CDK_OUTDIR")
	if outdir == "" {
		outdir = "cdk.out" // run directly: the same place `cdk synth` writes to
	}
	app := NewCDKApp(outdir)
	NewSampleApp(app, root)
	app.Synth(nil)
}

// findModuleRoot returns the nearest directory at or above the working directory whose go.mod
// declares module path.
func findModuleRoot(path string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == path {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above the working directory", path)
		}
		dir = parent
	}
}

// modulePath returns the module path a go.mod declares, or "".
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
