package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/scheduler"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// jobkit schedules: listed by the name declared in Go, paused (again: already), fired while
// paused, resumed; an unknown name exits 1.
func TestSchedulesCommand(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	sch, group := awstest.ScheduleGroup(t, cfg)
	q := awstest.CreateQueue(t, cfg, "reports", nil)
	s := scheduler.Schedule{Name: "nightly-report", Expression: "cron(0 2 * * ? *)", Args: thumb{Image: "report.png"}, Queue: q.URL}
	input, err := s.Input()
	require.NoError(t, err)
	awstest.CreateSchedule(t, sch, group, "Shop-NightlySchedule9B3C5FAF", s.Expression, q, input, "")

	out, errOut, code := cli(t, "", "schedules", "list", "--group", group)
	require.Equal(t, 0, code, errOut)
	// Created a moment ago, after its last 02:00: it has not run yet (LAST "-").
	assert.Regexp(t, `nightly-report\s+image\.thumb\s+ENABLED\s+cron\(0 2 \* \* \? \*\) UTC\s+-\s+\d{4}-`, out)
	assert.Contains(t, out, group+"/Shop-NightlySchedule9B3C5FAF")

	out, errOut, code = cli(t, "", "schedules", "pause", "nightly-report", "--group", group)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule nightly-report paused\n", out)
	out, errOut, code = cli(t, "", "schedules", "pause", "Shop-NightlySchedule9B3C5FAF", "--group", group)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule nightly-report: already paused, nothing changed\n", out)

	out, errOut, code = cli(t, "", "schedules", "list", "--group", group, "--json")
	require.Equal(t, 0, code, errOut)
	var doc schedulesJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Schedules, 1)
	assert.Equal(t, "DISABLED", doc.Schedules[0].State)
	assert.Equal(t, "nightly-report", doc.Schedules[0].JobName)
	assert.Nil(t, doc.Schedules[0].Last, "no tick since it was created")

	out, errOut, code = cli(t, "", "schedules", "fire", "nightly-report", "--group", group, "--json")
	require.Equal(t, 0, code, errOut)
	var fired scheduleActionJSON
	require.NoError(t, json.Unmarshal([]byte(out), &fired))
	assert.Equal(t, "fired", fired.Action)
	msgs := awstest.Take(t, client, q.URL, 1)
	env, err := jobs.DecodeEnvelope(aws.ToString(msgs[0].Body))
	require.NoError(t, err)
	assert.Equal(t, fired.JobID, env.ID)
	assert.Equal(t, fired.Message, aws.ToString(msgs[0].MessageId))

	out, errOut, code = cli(t, "", "schedules", "resume", "nightly-report", "--group", group)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "schedule nightly-report resumed\n", out)
	got, err := sch.GetSchedule(context.Background(), &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String("Shop-NightlySchedule9B3C5FAF")})
	require.NoError(t, err)
	assert.Equal(t, "ENABLED", string(got.State))

	_, errOut, code = cli(t, "", "schedules", "fire", "no-such", "--group", group)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "schedule not found: no-such")
}

// dlq redrive --id moves one dead job back and leaves the others; an id not in the DLQ exits 1.
func TestDLQRedriveOneJobByID(t *testing.T) {
	t.Parallel()
	cfg, client := awstest.SQS(t)
	src, dlq := awstest.QueueWithDLQ(t, cfg, "src", nil)
	ids := seedDead(t, client, dlq.URL, src.URL, "one", 3, func(int) string { return "k" })

	out, errOut, code := cli(t, "", "dlq", "redrive", "--dlq", dlq.URL, "--id", ids[1], "--progress", "none")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "moved 1 of")
	got := drainIDs(t, client, src.URL)
	assert.Equal(t, map[string]int{ids[1]: 1}, got)
	v, f := awstest.Counts(t, client, dlq.URL)
	assert.Equal(t, 2, v+f, "the other two stay dead")

	_, errOut, code = cli(t, "", "dlq", "redrive", "--dlq", dlq.URL, "--id", ids[1], "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no dead job "+ids[1])
}
