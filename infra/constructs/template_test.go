package constructs

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/require"

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

// configReason returns the reason of the *ConfigError that f panics with; any other panic, or
// none, fails the test.
func configReason(t *testing.T, f func()) string {
	t.Helper()
	v := mustPanic(t, f)
	err, _ := v.(error)
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "panic value %v", v)
	return ce.Reason
}

func newApp(t *testing.T) awscdk.App {
	t.Helper()
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
}

func newStack(t *testing.T) (awscdk.App, awscdk.Stack) {
	app := newApp(t)
	return app, awscdk.NewStack(app, jsii.String("Test"), nil)
}

// workerOnly is tpl.Only among a worker's own resources: the redrive recorder's, which the first
// worker of a queue defines within it (logical ids holding "Recorder"), are left out.
func workerOnly(t *testing.T, tpl template, typ string) (string, map[string]any) {
	t.Helper()
	var id string
	var body map[string]any
	n := 0
	for k, v := range tpl.Resources(typ) {
		if strings.Contains(k, "Recorder") {
			continue
		}
		id, body, n = k, v, n+1
	}
	require.Equal(t, 1, n, "resources of type %s outside the redrive recorder", typ)
	return id, body
}
