package constructs

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// GoSource is a Go main package that a Worker runs. It is compiled during synth for Lambda's
// provided.al2023 runtime on arm64 (GOOS=linux GOARCH=arm64 CGO_ENABLED=0, -tags lambda.norpc,
// -trimpath -buildvcs=false -ldflags="-s -w") into the asset's bootstrap: nobody builds it by hand.
type GoSource struct {
	// ModuleDir is the directory holding the go.mod of the package: absolute, or relative to the
	// working directory of the CDK app (under NewApp, the directory of cdk.json, so a service whose
	// go.mod sits beside cdk.json passes "."). The Worker records it in its
	// function's metadata relative to the cloud assembly, so the offline stack
	// (offline/deploy) builds the package from this module wherever the app ran.
	ModuleDir string
	// Package is the main package, slash-separated and relative to ModuleDir, e.g.
	// "functions/email"; or the import path of a main package of a module ModuleDir's module
	// requires, e.g. "github.com/jobkit-go/jobkit/cmd/jobkit-recorder" (RecorderPackage), built
	// with that module's version in ModuleDir's build list. An import path is told from a relative
	// path by its first element, which holds a dot (a domain name, as Go requires of a module path
	// outside the standard library): name no folder of a module so.
	Package string
}

// IsImportPath reports whether Package is an import path rather than a folder of ModuleDir (see
// Package).
func (s GoSource) IsImportPath() bool { return contract.IsImportPath(s.Package) }

// GoBuildImage is the container image used to build a GoSource when no Go toolchain is on PATH
// (CDK's Docker bundling). With Go installed, the build runs locally and Docker is never used.
var GoBuildImage = "golang:1.26"

func (s GoSource) validate() error {
	if s.ModuleDir == "" {
		return fmt.Errorf("GoSource.ModuleDir is empty")
	}
	if s.Package == "" {
		return fmt.Errorf("GoSource.Package is empty")
	}
	if path.IsAbs(s.Package) || strings.HasPrefix(path.Clean(s.Package), "..") {
		return fmt.Errorf("GoSource.Package %q must be relative to ModuleDir, or an import path", s.Package)
	}
	if s.IsImportPath() && path.Clean(s.Package) != s.Package {
		return fmt.Errorf("GoSource.Package %q is not a clean import path", s.Package)
	}
	if _, err := os.Stat(filepath.Join(s.ModuleDir, "go.mod")); err != nil {
		return fmt.Errorf("GoSource.ModuleDir %q has no go.mod: %w", s.ModuleDir, err)
	}
	return nil
}

// assemblyRelDir returns ModuleDir relative to the cloud assembly directory of scope's stage,
// slash-separated, or "" when ModuleDir is unset or cannot be made relative.
func (s GoSource) assemblyRelDir(scope constructs.IConstruct) string {
	if s.ModuleDir == "" {
		return ""
	}
	moduleDir, err := filepath.Abs(s.ModuleDir)
	if err != nil {
		return ""
	}
	stage := awscdk.Stage_Of(scope)
	if stage == nil || stage.Outdir() == nil {
		return ""
	}
	outdir, err := filepath.Abs(*stage.Outdir())
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(outdir, moduleDir)
	if err != nil {
		return ""
	}
	return filepath.ToSlash(rel)
}

// pkgArg is the package as the go command takes it: "./functions/email", or the import path.
func (s GoSource) pkgArg() string {
	if s.IsImportPath() {
		return s.Package
	}
	return "./" + path.Clean(s.Package)
}

// Code returns the Lambda code of s: an asset bundled by compiling the package during synth.
// The asset hash is the hash of the built bootstrap (builds are reproducible: -trimpath and
// -buildvcs=false), so a function is redeployed only when its binary changes.
// It panics if s is incomplete.
func (s GoSource) Code() awslambda.Code {
	moduleDir := s.mustModuleDir()
	env := map[string]*string{
		"GOOS":        jsii.String("linux"),
		"GOARCH":      jsii.String("arm64"),
		"CGO_ENABLED": jsii.String("0"),
		"GOCACHE":     jsii.String("/tmp/go-cache"),
		"GOPATH":      jsii.String("/tmp/go"),
	}
	args := append([]string{"go"}, s.buildArgs("/asset-output/bootstrap")...)
	return awslambda.Code_FromAsset(jsii.String(moduleDir), &awss3assets.AssetOptions{
		AssetHashType: awscdk.AssetHashType_OUTPUT,
		Bundling: &awscdk.BundlingOptions{
			Image:       awscdk.DockerImage_FromRegistry(jsii.String(GoBuildImage)),
			Command:     jsii.Strings(args...),
			Environment: &env,
			Local:       &goBundler{moduleDir: moduleDir, source: s},
		},
	})
}

// mustModuleDir returns the absolute path of s's module, panicking if s is incomplete.
func (s GoSource) mustModuleDir() string {
	if err := s.validate(); err != nil {
		panic("jobkit: " + err.Error())
	}
	moduleDir, err := filepath.Abs(s.ModuleDir)
	if err != nil {
		panic(fmt.Sprintf("jobkit: GoSource.ModuleDir %q: %v", s.ModuleDir, err))
	}
	return moduleDir
}

func (s GoSource) buildArgs(out string) []string {
	return []string{"build", "-tags", "lambda.norpc", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w", "-o", out, s.pkgArg()}
}

// goBundler builds a GoSource with the local Go toolchain (CDK local bundling).
type goBundler struct {
	moduleDir string
	source    GoSource
}

// TryBundle implements awscdk.ILocalBundling. It returns false when no Go toolchain is on PATH
// (CDK then falls back to Docker) and panics when the build fails: a broken function must stop
// the synth, with the compiler's output on stderr.
func (b *goBundler) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return jsii.Bool(false)
	}
	cmd := exec.Command(goBin, b.source.buildArgs(filepath.Join(*outputDir, "bootstrap"))...)
	cmd.Dir = b.moduleDir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		panic(fmt.Errorf("jobkit: go build %s for linux/arm64 in %s: %w", b.source.pkgArg(), b.moduleDir, err))
	}
	return jsii.Bool(true)
}

var _ awscdk.ILocalBundling = (*goBundler)(nil)

// goFunction is what differs between jobkit's Go Lambda functions (workers, the redrive recorder,
// the outbox forwarder); newGoFunction sets the rest.
type goFunction struct {
	source      GoSource
	code        awslambda.Code // nil: source.Code()
	description string
	timeout     time.Duration
	memoryMB    int
	env         map[string]*string
	role        awsiam.IRole
	logGroup    awslogs.ILogGroup
	reserved    int // reserved concurrency; 0: none
}

// newGoFunction defines a Go Lambda function with id "Function" in scope: provided.al2023 on arm64,
// JSON logs into its log group, and its source named in its metadata (SourceMetadataKey, and
// ModuleMetadataKey when the module can be named relative to the cloud assembly) so the offline
// stack builds it for this machine.
func newGoFunction(scope constructs.Construct, f goFunction) awslambda.Function {
	code := f.code
	if code == nil {
		code = f.source.Code()
	}
	fn := awslambda.NewFunction(scope, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          code,
		Description:   jsii.String(f.description),
		Timeout:       cdkDuration(f.timeout),
		MemorySize:    jsii.Number(f.memoryMB),
		Environment:   &f.env,
		Role:          f.role,
		LogGroup:      f.logGroup,
		LoggingFormat: awslambda.LoggingFormat_JSON,
	})
	if f.reserved > 0 {
		fn.Node().DefaultChild().(awslambda.CfnFunction).SetReservedConcurrentExecutions(jsii.Number(f.reserved))
	}
	if f.source.Package != "" {
		cfn := fn.Node().DefaultChild().(awslambda.CfnFunction)
		cfn.AddMetadata(jsii.String(SourceMetadataKey), jsii.String(path.Clean(f.source.Package)))
		if mod := f.source.assemblyRelDir(fn); mod != "" {
			cfn.AddMetadata(jsii.String(ModuleMetadataKey), jsii.String(mod))
		}
	}
	return fn
}

// sortedEnv is env as CDK takes it, added in name order.
func sortedEnv(env map[string]string) map[string]*string {
	out := map[string]*string{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out[k] = jsii.String(env[k])
	}
	return out
}
