package main

import (
	"debug/elf"
	"encoding/csv"
	"encoding/json"
	"fmt"
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
	"github.com/jobkit-go/jobkit/idempotency"
	jk "github.com/jobkit-go/jobkit/infra/constructs"
	"github.com/jobkit-go/jobkit/infra/internal/cfntest"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/scheduler"
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
		// Three job queues, the Notify queue's three lanes, their DLQs and holding queues (each
		// queue has a worker, whose redrive recorder reads it), and the Standard DLQ of the
		// schedules and delayed jobs.
		require.Len(t, state.Resources("AWS::SQS::Queue"), 19)
		require.Len(t, state.Resources("AWS::DynamoDB::Table"), 2)
		require.Empty(t, state.Resources("AWS::Lambda::Function"))
		outputs := state["Outputs"].(map[string]any)
		names := []string{samplejobs.QueueEmail, samplejobs.QueueLedger, samplejobs.QueueTranscode}
		for _, lane := range samplejobs.NotifyLanes {
			names = append(names, contract.LaneQueueName(samplejobs.QueueNotify, lane))
		}
		require.Equal(t, contract.LaneQueueName(samplejobs.QueueNotify, samplejobs.LaneDefault), samplejobs.Queues[samplejobs.KindSendNotification],
			"notifications go to the default lane unless a Priority says otherwise")
		for _, name := range names {
			var ids []string
			for _, key := range []string{jk.OutputQueuePrefix + name, jk.OutputDLQPrefix + name} {
				v, ok := cfntest.Get(outputs, key+".Value").(map[string]any)
				require.True(t, ok, "output %s", key)
				id, _ := v["Ref"].(string)
				require.Equal(t, "AWS::SQS::Queue", cfntest.Get(state, "Resources."+id+".Type"), "output %s is a queue URL", key)
				ids = append(ids, id)
			}
			// The redrive chain: the job queue → its holding queue → its DLQ.
			if name == samplejobs.QueueEmail {
				// 5 attempts and a margin of 20 for the rate limit's waits (docs/handlers.md).
				require.EqualValues(t, 25, cfntest.Get(state, "Resources."+ids[0]+".Properties.RedrivePolicy.maxReceiveCount"))
			}
			held := cfntest.Get(state, "Resources."+ids[0]+".Properties.RedrivePolicy.deadLetterTargetArn.Fn::GetAtt.0").(string)
			require.Contains(t, held, "Moved", name)
			require.Equal(t, cfntest.GetAtt(ids[1], "Arn"), cfntest.Get(state, "Resources."+held+".Properties.RedrivePolicy.deadLetterTargetArn"), name)
		}
		for _, body := range state.Resources("AWS::DynamoDB::Table") {
			require.Equal(t, "Retain", body["DeletionPolicy"])
			require.Equal(t, true, cfntest.Get(body, "Properties.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled"))
		}
		// The ledger queue is FIFO (and so are its DLQ and holding queue).
		var fifo int
		for _, body := range state.Resources("AWS::SQS::Queue") {
			if cfntest.Get(body, "Properties.FifoQueue") == true {
				fifo++
			}
		}
		require.Equal(t, 3, fifo)
	})

	t.Run("schedules", func(t *testing.T) {
		st := sample.State.Stack
		delayed := sample.State.Delayed
		roleArn := cfntest.Resolved(t, st, delayed.Role.RoleArn())
		dlqArn := cfntest.Resolved(t, st, delayed.DLQ.QueueArn())
		dlqID := cfntest.Get(dlqArn, "Fn::GetAtt.0").(string)
		require.Nil(t, cfntest.Get(state, "Resources."+dlqID+".Properties.FifoQueue"), "Scheduler refuses a FIFO dead-letter queue")

		// Every declared schedule is rendered once, in the state stack, none in the workers stack.
		require.Empty(t, workers.Resources("AWS::Scheduler::Schedule"))
		rendered := state.Resources("AWS::Scheduler::Schedule")
		require.Len(t, rendered, len(samplejobs.Schedules))
		require.Len(t, sample.State.Schedules, len(samplejobs.Schedules))
		byName := map[string]map[string]any{}
		roleByQueue := map[string]any{}
		for _, body := range rendered {
			p := cfntest.Props(body)
			in, _ := cfntest.Get(p, "Target.Input").(string)
			var env jobs.Envelope
			require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(in, scheduler.ScheduledTimePlaceholder, "2026-01-01T00:00:00Z")), &env), in)
			name := strings.TrimSuffix(strings.TrimPrefix(env.ID, scheduler.TickIDPrefix), ":2026-01-01T00:00:00Z")
			byName[name] = p
		}
		recurringGroup := cfntest.Resolved(t, st, jk.RecurringScheduleGroup(st).ScheduleGroupName())
		require.NotEqual(t, cfntest.Resolved(t, st, sample.State.Delayed.Group.ScheduleGroupName()), recurringGroup)
		for _, s := range samplejobs.Schedules {
			p := byName[s.Name]
			require.NotNil(t, p, "schedule %s rendered", s.Name)
			want, err := s.Input()
			require.NoError(t, err)
			require.Equal(t, want, cfntest.Get(p, "Target.Input"), s.Name)
			require.Contains(t, cfntest.Get(p, "Target.Input"), `"id":"sched:`+s.Name+`:<aws.scheduler.scheduled-time>"`)
			require.Contains(t, cfntest.Get(p, "Target.Input"), `"enqueued_at":"<aws.scheduler.scheduled-time>"`)
			require.Equal(t, s.Expression, p["ScheduleExpression"], s.Name)
			require.Equal(t, s.TimeZoneName(), p["ScheduleExpressionTimezone"], s.Name)
			require.Equal(t, "ENABLED", p["State"], s.Name)
			require.Equal(t, recurringGroup, p["GroupName"], "%s: the recurring schedules' group, neither the default group nor the delayed jobs'", s.Name)
			if s.FlexibleWindow > 0 {
				require.Equal(t, map[string]any{"Mode": "FLEXIBLE", "MaximumWindowInMinutes": s.FlexibleWindow.Minutes()}, p["FlexibleTimeWindow"], s.Name)
			} else {
				require.Equal(t, map[string]any{"Mode": "OFF"}, p["FlexibleTimeWindow"], s.Name)
			}
			q := sample.State.Queue(s.Queue)
			require.NotNil(t, q, s.Name)
			require.Equal(t, cfntest.Resolved(t, st, q.Queue.QueueArn()), cfntest.Get(p, "Target.Arn"), "%s targets queue %s", s.Name, s.Queue)
			// Not the delayed jobs' role (its producers differ): one per target queue, trusted
			// for this account's schedules in the recurring schedules' group only.
			schedRole := cfntest.Get(p, "Target.RoleArn")
			require.NotEqual(t, roleArn, schedRole, s.Name)
			if prev, ok := roleByQueue[s.Queue]; ok {
				require.Equal(t, prev, schedRole, "%s: one role per queue", s.Name)
			}
			roleByQueue[s.Queue] = schedRole
			schedTrust := cfntest.Get(state, "Resources."+cfntest.Get(schedRole, "Fn::GetAtt.0").(string)+".Properties.AssumeRolePolicyDocument.Statement.0")
			require.Equal(t, map[string]any{"Ref": "AWS::AccountId"}, cfntest.Get(schedTrust, "Condition.StringEquals.aws:SourceAccount"), s.Name)
			require.Equal(t, cfntest.Resolved(t, st, jk.RecurringScheduleGroup(st).ScheduleGroupArn()),
				cfntest.Get(schedTrust, "Condition.StringEquals.aws:SourceArn"), s.Name)
			require.Equal(t, dlqArn, cfntest.Get(p, "Target.DeadLetterConfig.Arn"), s.Name)
			require.Equal(t, map[string]any{
				"MaximumRetryAttempts":     float64(s.Retry.MaxRetries),
				"MaximumEventAgeInSeconds": s.Retry.EventAge().Seconds(),
			}, cfntest.Get(p, "Target.RetryPolicy"), s.Name)
			if q.FIFO {
				require.NotEmpty(t, s.GroupID)
				require.Equal(t, s.GroupID, cfntest.Get(p, "Target.SqsParameters.MessageGroupId"), s.Name)
			} else {
				require.Nil(t, cfntest.Get(p, "Target.SqsParameters.MessageGroupId"), s.Name)
			}
		}
		// The sample's two: the Berlin digest email and the hourly interest posting on the
		// FIFO ledger queue, whose message group is the account.
		digest := byName[samplejobs.ScheduleDailyDigest]
		require.Equal(t, "cron(0 8 * * ? *)", digest["ScheduleExpression"])
		require.Equal(t, "Europe/Berlin", digest["ScheduleExpressionTimezone"])
		require.Equal(t, cfntest.Resolved(t, st, sample.State.Email.Queue.QueueArn()), cfntest.Get(digest, "Target.Arn"))
		interest := byName[samplejobs.ScheduleLedgerInterest]
		require.Equal(t, cfntest.Resolved(t, st, sample.State.Ledger.Queue.QueueArn()), cfntest.Get(interest, "Target.Arn"))
		require.Equal(t, samplejobs.InterestAccount, cfntest.Get(interest, "Target.SqsParameters.MessageGroupId"))
		ledgerID := cfntest.Get(cfntest.Resolved(t, st, sample.State.Ledger.Queue.QueueArn()), "Fn::GetAtt.0").(string)
		require.Equal(t, true, cfntest.Get(state, "Resources."+ledgerID+".Properties.ContentBasedDeduplication"),
			"Scheduler sends no deduplication id to the FIFO queue")

		// Delayed jobs: a schedule group of their own (the recurring schedules have another);
		// one role, assumed by Scheduler for this account's schedules in that group only, that
		// may send to the three queues and the DLQ and do nothing else.
		require.Len(t, state.Resources("AWS::Scheduler::ScheduleGroup"), 2, "the delayed jobs' group and the recurring schedules'")
		groupID := cfntest.Get(cfntest.Resolved(t, st, delayed.Group.ScheduleGroupArn()), "Fn::GetAtt.0").(string)
		group := cfntest.Get(state, "Resources."+groupID)
		groupName, _ := cfntest.Get(group, "Properties.Name").(string)
		require.True(t, strings.HasPrefix(groupName, StateStackID+"-"), "CDK names the group after the stack and path: %q", groupName)
		require.LessOrEqual(t, len(groupName), 64)
		roleID := cfntest.Get(roleArn, "Fn::GetAtt.0").(string)
		trust := cfntest.Get(state, "Resources."+roleID+".Properties.AssumeRolePolicyDocument.Statement.0")
		require.Equal(t, "scheduler.amazonaws.com", cfntest.Get(trust, "Principal.Service"))
		require.Equal(t, "sts:AssumeRole", cfntest.Get(trust, "Action"))
		require.Equal(t, map[string]any{"Ref": "AWS::AccountId"}, cfntest.Get(trust, "Condition.StringEquals.aws:SourceAccount"))
		require.Equal(t, cfntest.GetAtt(groupID, "Arn"), cfntest.Get(trust, "Condition.ArnEquals.aws:SourceArn"), "its own group's schedules only")
		for _, q := range []*jk.JobQueue{sample.State.Email, sample.State.Ledger, sample.State.Transcode} {
			require.Equal(t, map[string]bool{"sqs:SendMessage": true}, state.AllowedActions(cfntest.Resolved(t, st, q.Queue.QueueArn())), q.Name)
		}
		require.Equal(t, map[string]bool{"sqs:SendMessage": true}, state.AllowedActions(dlqArn))
		var roleActions []string
		for _, body := range state.Resources("AWS::IAM::Policy") {
			roles, _ := cfntest.Get(body, "Properties.Roles").([]any)
			if len(roles) == 1 && cfntest.Get(roles[0], "Ref") == roleID {
				for _, stmt := range cfntest.Get(body, "Properties.PolicyDocument.Statement").([]any) {
					roleActions = append(roleActions, cfntest.Actions(stmt.(map[string]any))...)
				}
			}
		}
		require.NotEmpty(t, roleActions)
		for _, a := range roleActions {
			require.Equal(t, "sqs:SendMessage", a, "the Scheduler role may only send")
		}

		// Outputs: a producer's scheduler.DelayerConfig (group, role, DLQ) and the DLQ's URL.
		outputs := state["Outputs"].(map[string]any)
		id := samplejobs.DelayedJobsName
		for key, want := range map[string]any{
			jk.OutputScheduleGroupPrefix + id:    cfntest.Resolved(t, st, delayed.Group.ScheduleGroupName()),
			jk.OutputSchedulerRoleArnPrefix + id: roleArn,
			jk.OutputScheduleDLQArnPrefix + id:   dlqArn,
			jk.OutputScheduleDLQURLPrefix + id:   cfntest.Ref(dlqID),
		} {
			require.Equal(t, want, cfntest.Get(outputs, key+".Value"), "output %s", key)
		}
		require.Equal(t, "JobkitSchedulerRoleArnDelayedJobs", jk.OutputSchedulerRoleArnPrefix+id, "the name producers look up")
	})

	t.Run("workers", func(t *testing.T) {
		fns := workers.Resources("AWS::Lambda::Function")
		require.Len(t, fns, 12, "email, ledger, the outbox forwarder, a notify function per lane, and a redrive recorder per job queue")
		bySource := map[string]map[string]any{}
		recorders := 0
		for _, body := range fns {
			src, _ := cfntest.Get(body, "Metadata."+jk.SourceMetadataKey).(string)
			bySource[src] = body
			if src == jk.RecorderPackage {
				recorders++
			}
		}
		require.ElementsMatch(t, []string{"functions/email", "functions/ledger", jk.OutboxPackage, "functions/notify", jk.RecorderPackage}, keys(bySource))
		require.Equal(t, 6, recorders, "email, ledger, transcode (a container worker) and the three notify lanes")

		for src, body := range bySource {
			if src == jk.OutboxPackage {
				continue // the forwarder, below
			}
			if src == jk.RecorderPackage {
				// Built, by import path, from the sample's module like the workers.
				env := cfntest.Get(body, "Properties.Environment.Variables").(map[string]any)
				require.Contains(t, env, contract.EnvDLQURL)
				require.Equal(t, filepath.ToSlash(mustRel(t, outdir, root)), cfntest.Get(body, "Metadata."+jk.ModuleMetadataKey))
			} else {
				requireWorkerEnv(t, src, body)
			}
			p := cfntest.Props(body)
			require.Equal(t, "provided.al2023", p["Runtime"], src)
			require.Equal(t, []any{"arm64"}, p["Architectures"], src)
			require.Equal(t, "JSON", cfntest.Get(p, "LoggingConfig.LogFormat"), src)

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
		require.Len(t, esms, 12, "email, ledger, three lanes, the outbox stream and six holding queues")
		byBatch := map[float64]map[string]any{}
		var laneConcurrency []any
		held := 0
		for _, body := range esms {
			p := cfntest.Props(body)
			require.Equal(t, []any{"ReportBatchItemFailures"}, p["FunctionResponseTypes"])
			if strings.Contains(fmt.Sprint(cfntest.Get(p, "EventSourceArn")), "Moved") {
				held++ // a redrive recorder's
				continue
			}
			if src := fmt.Sprint(cfntest.Get(p, "EventSourceArn")); strings.Contains(src, samplejobs.QueueNotify) {
				laneConcurrency = append(laneConcurrency, cfntest.Get(p, "ScalingConfig.MaximumConcurrency"))
				continue
			}
			byBatch[p["BatchSize"].(float64)] = p
		}
		require.Equal(t, 6, held)
		// The lanes share 10 by weight 2:2:1: default 4, critical 4, bulk 2.
		require.ElementsMatch(t, []any{float64(4), float64(4), float64(2)}, laneConcurrency)
		require.Equal(t, float64(2), cfntest.Get(byBatch[25], "MaximumBatchingWindowInSeconds"), "email")
		require.Equal(t, float64(10), cfntest.Get(byBatch[25], "ScalingConfig.MaximumConcurrency"), "email")
		require.Nil(t, cfntest.Get(byBatch[10], "MaximumBatchingWindowInSeconds"), "ledger is FIFO")
		require.Equal(t, float64(5), cfntest.Get(byBatch[10], "ScalingConfig.MaximumConcurrency"), "ledger")
		// The outbox forwarder: on the state table's stream (imported), outbox# INSERTs only.
		outbox := byBatch[jk.DefaultOutboxBatchSize]
		require.Equal(t, "TRIM_HORIZON", outbox["StartingPosition"])
		require.Contains(t, fmt.Sprint(outbox["EventSourceArn"]), "StreamArn")
		require.Equal(t, (*jk.OutboxStreamFilter())["pattern"], cfntest.Get(outbox, "FilterCriteria.Filters.0.Pattern"))
		outboxFn := cfntest.Props(bySource[jk.OutboxPackage])
		require.Contains(t, cfntest.Get(outboxFn, "Environment.Variables"), contract.EnvIdempotencyTable)

		// Transcode runs in containers: an arm64 task of functions/transcode with the consumer's
		// environment and a stop timeout above its drain budget.
		_, td := workers.Only(t, "AWS::ECS::TaskDefinition")
		require.Equal(t, "functions/transcode", cfntest.Get(td, "Metadata."+jk.SourceMetadataKey))
		require.Equal(t, "ARM64", cfntest.Get(cfntest.Props(td), "RuntimePlatform.CpuArchitecture"))
		container := cfntest.Get(cfntest.Props(td), "ContainerDefinitions.0").(map[string]any)
		cenv := map[string]any{}
		for _, e := range container["Environment"].([]any) {
			cenv[e.(map[string]any)["Name"].(string)] = e.(map[string]any)["Value"]
		}
		require.Equal(t, "600", cenv[contract.EnvVisibilityTimeout])
		require.Equal(t, "1m0s", cenv[contract.EnvDrainTimeout])
		require.Contains(t, cenv, contract.EnvIdempotencyTable, "transcodes run behind idempotency")
		require.Equal(t, float64(65), container["StopTimeout"])
		workers.Only(t, "AWS::ECS::Service")
		_, target := workers.Only(t, "AWS::ApplicationAutoScaling::ScalableTarget")
		require.Equal(t, float64(0), cfntest.Get(cfntest.Props(target), "MinCapacity"), "no task while the queue is empty")

		// Each worker may make the idempotency store's item calls on its own kinds' records only;
		// the email worker also keeps job states and batch counts on the job# and batch# items.
		var tableStmts, stateStmts, outboxStmts []map[string]any
		for _, st := range workers.Statements() {
			if acts := cfntest.Actions(st); slices.Equal(acts, jk.OutboxStreamActions) || slices.Equal(acts, jk.OutboxDeleteActions) {
				outboxStmts = append(outboxStmts, st)
				continue
			}
			for _, a := range cfntest.Actions(st) {
				if strings.HasPrefix(a, "dynamodb:") && strings.Contains(fmt.Sprint(st["Resource"]), "Idempotency") {
					if slices.Contains(cfntest.Actions(st), "dynamodb:ConditionCheckItem") {
						stateStmts = append(stateStmts, st)
					} else {
						tableStmts = append(tableStmts, st)
					}
					break
				}
			}
		}
		require.Len(t, tableStmts, 6, "email, ledger, transcode and the notify lanes use the idempotency table")
		var prefixes []any
		for _, st := range tableStmts {
			require.ElementsMatch(t, jk.IdempotencyActions, cfntest.Actions(st))
			keys, _ := cfntest.Get(st, "Condition.ForAllValues:StringLike.dynamodb:LeadingKeys").([]any)
			require.GreaterOrEqual(t, len(keys), 2, "%v", st)
			require.Equal(t, idempotency.NotRunKeyPrefix+"*", keys[0], "the ledger of deliveries that ran no job")
			prefixes = append(prefixes, keys[1:]...)
		}
		// The email function's rate-limit buckets are the mail provider limiter's only.
		limiter := ratelimit.BucketID(samplejobs.LimiterMailProvider, "")
		notify := samplejobs.KindSendNotification + "#*"
		require.ElementsMatch(t, []any{samplejobs.KindEmailBatchDone + "#*", samplejobs.KindSendEmail + "#*", samplejobs.KindPostLedger + "#*", limiter, limiter + "#*",
			samplejobs.KindTranscodeVideo + "#*", notify, notify, notify}, prefixes)
		require.Len(t, outboxStmts, 2, "the forwarder reads the stream and deletes outbox items")
		for _, st := range outboxStmts {
			require.Contains(t, fmt.Sprint(st["Resource"]), "Idempotency")
		}
		require.Len(t, stateStmts, 2, "the email worker and its queue's redrive recorder keep job states")
		for _, st := range stateStmts {
			require.ElementsMatch(t, jk.JobStateActions, cfntest.Actions(st))
			require.Equal(t, []any{"job#*", "batch#*"}, cfntest.Get(st, "Condition.ForAllValues:StringLike.dynamodb:LeadingKeys"))
		}

		require.Len(t, workers.Resources("AWS::CloudWatch::Dashboard"), 1)
		require.Len(t, workers.Resources("AWS::Logs::LogGroup"), 14, "twelve functions, the containers, the VPC's flow log")
		for _, body := range workers.Resources("AWS::IAM::Role") {
			require.NotContains(t, cfntest.Props(body), "ManagedPolicyArns")
		}
	})

	// Every alarm of the sample notifies its one topic: the state stack's by reference, the
	// workers stack's through the state stack's export of the topic.
	t.Run("alarms notify", func(t *testing.T) {
		topicID, _ := state.Only(t, "AWS::SNS::Topic")
		exports := map[string]any{}
		for _, out := range state["Outputs"].(map[string]any) {
			o := out.(map[string]any)
			if name, ok := cfntest.Get(o, "Export.Name").(string); ok {
				exports[name] = o["Value"]
			}
		}
		alarms := 0
		for stack, tpl := range map[string]cfntest.Template{StateStackID: state, WorkersStackID: workers} {
			scaling := tpl.Resources("AWS::ApplicationAutoScaling::ScalingPolicy")
			for id, body := range tpl.Resources("AWS::CloudWatch::Alarm") {
				actions, _ := cfntest.Props(body)["AlarmActions"].([]any)
				if ref, _ := cfntest.Get(actions, "0.Ref").(string); scaling[ref] != nil {
					continue // the transcode service's step scaling, not a notification
				}
				alarms++
				require.Len(t, actions, 1, "%s/%s notifies the topic", stack, id)
				action := actions[0]
				if imp, ok := action.(map[string]any)["Fn::ImportValue"].(string); ok {
					action = exports[imp]
				}
				require.Equal(t, cfntest.Ref(topicID), action, "%s/%s notifies the topic", stack, id)
			}
		}
		// The topic's policy lets CloudWatch publish (it replaces SNS's default one), for this
		// account's alarms, beside the TLS-only deny.
		_, policy := state.Only(t, "AWS::SNS::TopicPolicy")
		var allow map[string]any
		for _, st := range cfntest.Get(policy, "Properties.PolicyDocument.Statement").([]any) {
			if cfntest.Get(st, "Effect") == "Allow" {
				allow = st.(map[string]any)
			}
		}
		require.NotNil(t, allow, "an Allow statement in %v", policy)
		require.Equal(t, map[string]any{"Service": "cloudwatch.amazonaws.com"}, allow["Principal"])
		require.Equal(t, "sns:Publish", allow["Action"])
		require.Equal(t, cfntest.Ref(topicID), allow["Resource"])
		require.Equal(t, map[string]any{"Ref": "AWS::AccountId"}, cfntest.Get(allow, "Condition.StringEquals.aws:SourceAccount"))
		require.NotNil(t, cfntest.Get(allow, "Condition.ArnLike.aws:SourceArn"))
		// Per queue and lane: DLQ depth and age (12); per function worker: errors and throttles
		// (10); the container worker's memory; the outbox forwarder's three; the delayed jobs' DLQ; a
		// backlog alarm per lane (3).
		require.Equal(t, 30, alarms)
	})

	t.Run("no wildcard actions", func(t *testing.T) {
		cfntest.RequireNoWildcardGrant(t, state)
		cfntest.RequireNoWildcardGrant(t, workers)
	})

	t.Run("no fixed names", func(t *testing.T) {
		for stack, tpl := range map[string]cfntest.Template{StateStackID: state, WorkersStackID: workers} {
			for id, body := range tpl["Resources"].(map[string]any) {
				names := []string{"QueueName", "TableName", "FunctionName", "RoleName", "LogGroupName", "DashboardName"}
				if typ, _ := body.(map[string]any)["Type"].(string); strings.HasPrefix(typ, "AWS::Scheduler::") {
					names = append(names, "Name")
				}
				for _, k := range names {
					v := cfntest.Props(body.(map[string]any))[k]
					name, literal := v.(string)
					if literal && k == "Name" && strings.HasPrefix(name, stack+"-") {
						continue // generated by CDK from the stack name and construct path
					}
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

	// AWS's CloudFormation linter: no error, and no warning but those .cfnlintrc ignores, each
	// with its reason there.
	t.Run("cfn-lint", func(t *testing.T) {
		findings := cfntest.Lint(t, root, filepath.Join(outdir, StateStackID+".template.json"), filepath.Join(outdir, WorkersStackID+".template.json"))
		require.Empty(t, findings)
	})
}

// The linter check finds what it should: a queue property CloudFormation does not know.
func TestCfnLintCatchesErrors(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "Bad.template.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{"VisibilityTimeout":"soon","Colour":"blue"}}}}`), 0o644))
	findings := cfntest.Lint(t, root, bad)
	require.NotEmpty(t, findings)
	require.Contains(t, strings.Join(findings, "\n"), ":E3002:", "an unknown property is an error")
}

// requireWorkerEnv checks a worker function's environment: what jobs.ConfigFromEnv reads.
func requireWorkerEnv(t *testing.T, src string, body map[string]any) {
	t.Helper()
	env := cfntest.Get(body, "Properties.Environment.Variables").(map[string]any)
	for _, k := range []string{contract.EnvQueueURL, contract.EnvDLQURL, contract.EnvMaxAttempts, contract.EnvVisibilityTimeout,
		contract.EnvConcurrency, contract.EnvBackoffBase, contract.EnvBackoffCap} {
		require.Contains(t, env, k, "%s env", src)
	}
	require.Contains(t, env, contract.EnvIdempotencyTable)
	if src == "functions/ledger" {
		require.Contains(t, env, samplejobs.EnvLedgerTable)
	}
}

// mustRel is filepath.Rel of the two paths, made absolute.
func mustRel(t *testing.T, base, target string) string {
	t.Helper()
	b, err := filepath.Abs(base)
	require.NoError(t, err)
	rel, err := filepath.Rel(b, target)
	require.NoError(t, err)
	return rel
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
