package constructs

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
)

// The construct tests synthesize real stacks through jsii and assert on the CloudFormation
// template as plain Go values (package cfntest).

// helloSource is a dependency-free main package, quick to build for the bundling path.
var helloSource = GoSource{ModuleDir: "..", Package: "constructs/testdata/hello"}

type template = cfntest.Template

var (
	synth                  = cfntest.Synth
	props                  = cfntest.Props
	get                    = cfntest.Get
	ref                    = cfntest.Ref
	getAtt                 = cfntest.GetAtt
	requireNoWildcardGrant = cfntest.RequireNoWildcardGrant
	mustPanic              = cfntest.MustPanic
	toString               = cfntest.PanicText
)

func newApp(t *testing.T) awscdk.App {
	t.Helper()
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
}

func newStack(t *testing.T) (awscdk.App, awscdk.Stack) {
	app := newApp(t)
	return app, awscdk.NewStack(app, jsii.String("Test"), nil)
}
