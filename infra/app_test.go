package main

import (
	"debug/elf"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	jk "github.com/jobkit-go/jobkit/infra/constructs"
	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
	"github.com/jobkit-go/jobkit/jobs"
)

// TestSampleApp synthesizes the whole sample app as `cdk synth` does — building the three
// functions for linux/arm64 — and checks the cloud assembly.
func TestSampleApp(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	found, err := findModuleRoot(libraryModule)
	require.NoError(t, err)
	require.Equal(t, root, found)

	outdir := t.TempDir()
	app := NewCDKApp(outdir)
	sample := NewSampleApp(app, root)
	asm := app.Synth(nil)
	require.Equal(t, outdir, *asm.Directory())

	var ids []string
	for _, st := range *asm.Stacks() {
		ids = append(ids, *st.StackName())
	}
	slices.Sort(ids)
	require.Equal(t, []string{StateStackID, WorkersStackID}, ids, "the CLI and the offline stack look stacks up by these ids")

	state := cfntest.ReadFile(t, filepath.Join(outdir, StateStackID+".template.json"))
	workers := cfntest.ReadFile(t, filepath.Join(outdir, WorkersStackID+".template.json"))

	t.Run("state", func(t *testing.T) {
		require.Len(t, state.Resources("AWS::SQS::Queue"), 6)
		require.Len(t, state.Resources("AWS::DynamoDB::Table"), 2)
		require.Empty(t, state.Resources("AWS::Lambda::Function"))
		outputs := state["Outputs"].(map[string]any)
		for _, name := range []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode} {
			for _, key := range []string{jk.OutputQueuePrefix + name, jk.OutputDLQPrefix + name} {
				v, ok := cfntest.Get(outputs, key+".Value").(map[string]any)
				require.True(t, ok, "output %s", key)
				id, _ := v["Ref"].(string)
				require.Equal(t, "AWS::SQS::Queue", cfntest.Get(state, "Resources."+id+".Type"), "output %s is a queue URL", key)
			}
		}
		for _, body := range state.Resources("AWS::DynamoDB::Table") {
			require.Equal(t, "Retain", body["DeletionPolicy"])
			require.Equal(t, true, cfntest.Get(body, "Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled"))
		}
		// The ledger queue is FIFO (and so is its DLQ).
		var fifo int
		for _, body := range state.Resources("AWS::SQS::Queue") {
			if cfntest.Get(body, "Properties.FifoQueue") == true {
				fifo++
			}
		}
		require.Equal(t, 2, fifo)
	})

	t.Run("workers", func(t *testing.T) {
		fns := workers.Resources("AWS::Lambda::Function")
		require.Len(t, fns, 3)
		bySource := map[string]map[string]any{}
		for _, body := range fns {
			src, _ := cfntest.Get(body, "Metadata."+jk.SourceMetadataKey).(string)
			bySource[src] = body
		}
		require.ElementsMatch(t, []string{"functions/email", "functions/ledger", "functions/transcode"}, keys(bySource))

		for src, body := range bySource {
			p := cfntest.Props(body)
			require.Equal(t, "provided.al2023", p["Runtime"], src)
			require.Equal(t, []any{"arm64"}, p["Architectures"], src)
			require.Equal(t, "JSON", cfntest.Get(p, "LoggingConfig.LogFormat"), src)
			env := cfntest.Get(p, "Environment.Variables").(map[string]any)
			for _, k := range []string{jobs.EnvQueueURL, jobs.EnvDLQURL, jobs.EnvMaxAttempts, jobs.EnvVisibilityTimeout,
				jobs.EnvConcurrency, jobs.EnvBackoffBase, jobs.EnvBackoffCap} {
				require.Contains(t, env, k, "%s env", src)
			}
			if src == "functions/transcode" {
				require.NotContains(t, env, jobs.EnvIdempotencyTable)
				require.Equal(t, float64(600), p["Timeout"])
				require.Equal(t, "600", env[jobs.EnvVisibilityTimeout])
			} else {
				require.Contains(t, env, jobs.EnvIdempotencyTable)
			}
			if src == "functions/ledger" {
				require.Contains(t, env, samplejobs.EnvLedgerTable)
			}

			// The asset holds the function built for arm64 by the synth.
			key, _ := cfntest.Get(p, "Code.S3Key").(string)
			require.NotEmpty(t, key, src)
			bootstrap := filepath.Join(outdir, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
			f, err := elf.Open(bootstrap)
			require.NoError(t, err, src)
			require.Equal(t, elf.EM_AARCH64, f.Machine, src)
			f.Close()
			info, err := os.Stat(bootstrap)
			require.NoError(t, err)
			t.Logf("%s: bootstrap %.1f MB (linux/arm64)", src, float64(info.Size())/1e6)
		}

		esms := workers.Resources("AWS::Lambda::EventSourceMapping")
		require.Len(t, esms, 3)
		byBatch := map[float64]map[string]any{}
		for _, body := range esms {
			p := cfntest.Props(body)
			require.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"])
			byBatch[p["BatchSize"].(float64)] = p
		}
		require.Equal(t, float64(2), cfntest.Get(byBatch[25], "MaximumBatchingWindowInSeconds"), "email")
		require.Equal(t, float64(10), cfntest.Get(byBatch[25], "ScalingConfig.MaximumConcurrency"), "email")
		require.Nil(t, cfntest.Get(byBatch[10], "MaximumBatchingWindowInSeconds"), "ledger is FIFO")
		require.Equal(t, float64(5), cfntest.Get(byBatch[10], "ScalingConfig.MaximumConcurrency"), "ledger")
		require.Equal(t, float64(2), cfntest.Get(byBatch[1], "ScalingConfig.MaximumConcurrency"), "transcode")

		require.Len(t, workers.Resources("AWS::CloudWatch::Dashboard"), 1)
		require.Len(t, workers.Resources("AWS::Logs::LogGroup"), 3)
		for _, body := range workers.Resources("AWS::IAM::Role") {
			require.NotContains(t, cfntest.Props(body), "ManagedPolicyArns")
		}
	})

	t.Run("no wildcard actions", func(t *testing.T) {
		cfntest.RequireNoWildcardGrant(t, state)
		cfntest.RequireNoWildcardGrant(t, workers)
	})

	t.Run("no fixed names", func(t *testing.T) {
		for _, tpl := range []cfntest.Template{state, workers} {
			for id, body := range tpl["Resources"].(map[string]any) {
				for _, k := range []string{"QueueName", "TableName", "FunctionName", "RoleName", "LogGroupName", "DashboardName"} {
					v := cfntest.Props(body.(map[string]any))[k]
					_, literal := v.(string)
					require.False(t, literal, "%s has a fixed %s %v", id, k, v)
				}
			}
		}
	})

	// cdk-nag AwsSolutions: no unsuppressed error, in the reports and in the annotations, and
	// every suppression has a reason.
	t.Run("cdk-nag", func(t *testing.T) {
		for _, stack := range []awscdk.Stack{sample.State.Stack, sample.Workers.Stack} {
			require.Empty(t, nagErrors(t, outdir, *stack.StackName()))
			require.Zero(t, nagAnnotations(stack), "%s: nag errors in the annotations", *stack.StackName())
		}
	})
}

// The nag check finds what it should: a queue without encryption, TLS or DLQ is reported.
func TestNagCheckCatchesErrors(t *testing.T) {
	outdir := t.TempDir()
	app := NewCDKApp(outdir)
	stack := awscdk.NewStack(app, jsii.String("Bad"), nil)
	awssqs.NewQueue(stack, jsii.String("Plain"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(true)}), nil)
	app.Synth(nil)
	errs := nagErrors(t, outdir, "Bad")
	require.Contains(t, errs, "AwsSolutions-SQS2 Bad/Plain/Resource")
	require.Contains(t, errs, "AwsSolutions-SQS3 Bad/Plain/Resource")
	require.Contains(t, errs, "AwsSolutions-SQS4 Bad/Plain/Resource")
	require.NotZero(t, nagAnnotations(stack))
}

// nagErrors returns the unsuppressed error findings ("<rule> <resource>") of a stack's
// AwsSolutions report, failing if a suppression has no reason.
func nagErrors(t *testing.T, outdir, stack string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(outdir, "AwsSolutions-"+stack+"-NagReport.csv"))
	require.NoError(t, err, "the nag pack writes a report per stack")
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"Rule ID", "Resource ID", "Compliance", "Exception Reason", "Rule Level", "Rule Info"}, rows[0])
	require.Greater(t, len(rows), 1, "rules ran on %s", stack)
	var errs []string
	for _, r := range rows[1:] {
		rule, resource, compliance, reason, level := r[0], r[1], r[2], r[3], r[4]
		switch {
		case compliance == "Non-Compliant" && level == "Error":
			errs = append(errs, rule+" "+resource)
		case compliance == "Non-Compliant":
			t.Logf("%s: nag warning %s on %s", stack, rule, resource)
		case compliance == "Suppressed":
			require.NotEmpty(t, strings.TrimSpace(reason), "%s: suppression of %s on %s has no reason", stack, rule, resource)
		}
	}
	return errs
}

// nagAnnotations counts the AwsSolutions error annotations on a synthesized stack.
func nagAnnotations(stack awscdk.Stack) int {
	return len(*assertions.Annotations_FromStack(stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
