package deploy_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// An ECS task definition whose metadata names a Go source becomes a Container: its environment as
// the task definition gives it, every reference resolved, its stop timeout, and a binary built for
// this machine. Clusters and services are skipped with a reason; a task definition without a
// source is skipped too, and so is a sidecar (a container other than the one the metadata names).
func TestDeployContainers(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	edit := func(stack string, tpl map[string]any) {
		if stack != "JobkitWorkers" {
			return
		}
		res := tpl["Resources"].(map[string]any)
		res["EncoderTask1A2B3C4D"] = map[string]any{
			"Type":     "AWS::ECS::TaskDefinition",
			"Metadata": map[string]any{deploy.SourceMetadataKey: "offline/deploy/testdata/echofn", contract.ContainerMetadataKey: "Worker"},
			"Properties": map[string]any{
				"ContainerDefinitions": []any{map[string]any{
					"Name": "CloudWatchAgent", "Image": "amazon/cloudwatch-agent:1",
				}, map[string]any{
					"Name":        "Worker",
					"Image":       map[string]any{"Fn::Sub": "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/assets:abc"},
					"StopTimeout": 65,
					"Environment": []any{
						map[string]any{"Name": "JOBKIT_QUEUE_URL", "Value": map[string]any{"Fn::ImportValue": "JobkitState:ExportsOutputRefEchoQueue2E8F3C41A1B2C3D4"}},
						map[string]any{"Name": "JOBKIT_DRAIN_TIMEOUT", "Value": "1m0s"},
						map[string]any{"Name": "LOG_GROUP", "Value": map[string]any{"Ref": "EchoLogs8FF0C9F6"}},
					},
				}},
			},
		}
		res["OtherTask5E6F7A8B"] = map[string]any{
			"Type":       "AWS::ECS::TaskDefinition",
			"Properties": map[string]any{"ContainerDefinitions": []any{map[string]any{"Name": "Web", "Image": "nginx"}}},
		}
		res["EncoderService9C8D7E6F"] = map[string]any{
			"Type":       "AWS::ECS::Service",
			"Properties": map[string]any{"TaskDefinition": map[string]any{"Ref": "EncoderTask1A2B3C4D"}},
		}
	}
	p := prefix()
	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: deploytest.Assembly(t, "", edit), Prefix: p, ModuleDir: moduleDir, BuildDir: t.TempDir(),
	})

	require.Len(t, d.Containers, 1)
	c := d.Containers[0]
	require.Equal(t, "EncoderTask1A2B3C4D", c.LogicalID)
	require.Equal(t, "Worker", c.Name)
	require.Equal(t, "offline/deploy/testdata/echofn", c.Source)
	require.Equal(t, 65*time.Second, c.StopTimeout)
	require.Equal(t, map[string]string{
		"JOBKIT_QUEUE_URL":     d.Queue("EchoQueue2E8F3C41").URL,
		"JOBKIT_DRAIN_TIMEOUT": "1m0s",
		"LOG_GROUP":            p + "JobkitWorkers-EchoLogs8FF0C9F6",
	}, c.Env)
	st, err := os.Stat(c.Binary)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&0o111, "the binary is executable")

	skipped := map[string]string{}
	for _, s := range d.Skipped {
		skipped[s.LogicalID] = s.Reason
	}
	require.Contains(t, skipped["OtherTask5E6F7A8B"], deploy.SourceMetadataKey)
	require.Contains(t, skipped["EncoderService9C8D7E6F"], "local processes")
	require.Contains(t, skipped["EncoderTask1A2B3C4D/CloudWatchAgent"], "a sidecar", "only the container the metadata names runs the source")
}
