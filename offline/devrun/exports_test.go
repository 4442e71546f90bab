package devrun_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devrun"
)

// The exports name the stacks' outputs, the emulator, and test credentials when the shell has
// none, so a producer sourcing .run/dev.env reaches the stack on a machine without AWS
// credentials; credentials the shell already has are left alone.
func TestExportsGiveAProducerWhatItNeeds(t *testing.T) {
	d := &deploy.Deployment{Region: "eu-west-1", Stacks: []deploy.Stack{
		{Name: "B", Outputs: map[string]string{"JobkitQueueEmail": "http://q/Email"}},
		{Name: "A", Outputs: map[string]string{"JobkitDlqEmail": "http://q/Email-dlq"}},
	}}
	names := func(exports []devrun.Export) map[string]string {
		m := map[string]string{}
		for _, e := range exports {
			m[e.Name] = e.Value
		}
		return m
	}

	t.Setenv("AWS_ACCESS_KEY_ID", "")
	got := devrun.Exports(d, "http://127.0.0.1:4566")
	require.Equal(t, "JobkitDlqEmail", got[0].Name, "outputs sorted by name")
	require.Equal(t, map[string]string{
		"JobkitDlqEmail": "http://q/Email-dlq", "JobkitQueueEmail": "http://q/Email",
		"JOBKIT_STACK":     "B", // the stack whose outputs name a job queue, for the CLI's --stack
		"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_REGION": "eu-west-1",
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
	}, names(got))
	require.Equal(t, `export AWS_REGION='eu-west-1'`, devrun.Export{Name: "AWS_REGION", Value: "eu-west-1"}.String())

	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	got = devrun.Exports(d, "http://127.0.0.1:4566")
	require.NotContains(t, names(got), "AWS_ACCESS_KEY_ID", "the shell's own credentials stay")
	require.NotContains(t, names(got), "AWS_SECRET_ACCESS_KEY")
}
