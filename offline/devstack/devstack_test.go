package devstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/deploy/deploytest"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/offline/internal/procgroup"
	"github.com/jobkit-go/jobkit/offline/schedfire"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// fixture copies the deploy package's test assembly, turning its schedule into a one-time
// schedule due at `at`, so the local firing loop sends it during the test.
func fixture(t *testing.T, at time.Time) string {
	t.Helper()
	return fixtureWith(t, at, nil)
}

// writeAsset writes files (name to content) into the assembly's folder asset.<name>.
func writeAsset(t *testing.T, dir, name string, files map[string]string) {
	t.Helper()
	asset := filepath.Join(dir, "asset."+name)
	require.NoError(t, os.MkdirAll(asset, 0o755))
	for file, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(asset, file), []byte(content), 0o644))
	}
}

// upConfig brings the assembly in dir up on cfg's endpoint without the scheduler, its functions'
// output kept off the terminal.
func upConfig(t *testing.T, cfg aws.Config, dir string) devstack.UpConfig {
	return devstack.UpConfig{
		Config: devstack.Config{AWS: cfg, Output: &awstest.SyncBuffer{}, NoScheduler: true},
		Deploy: deploy.Options{CDKOut: dir, Prefix: awstest.Name(t, "") + "-", ModuleDir: "../..", BuildDir: t.TempDir()},
	}
}

// fixtureWith is fixture with edit applied to the workers template's resources.
func fixtureWith(t *testing.T, at time.Time, edit func(resources map[string]any)) string {
	t.Helper()
	return deploytest.Assembly(t, "", func(stack string, tpl map[string]any) {
		if stack != "JobkitWorkers" {
			return
		}
		p := deploytest.Resource(tpl, "NightlyScheduleC0D1E2F3")["Properties"].(map[string]any)
		p["ScheduleExpression"] = "at(" + at.UTC().Format("2006-01-02T15:04:05") + ")"
		p["ScheduleExpressionTimezone"] = "UTC"
		p["Target"].(map[string]any)["Input"] = "scheduled-once"
		if edit != nil {
			edit(tpl["Resources"].(map[string]any))
		}
	})
}

// The synthesized fixture runs: messages on both queues reach the real function binary with the
// environment the template gives it, the schedule fires through the queue, and Stop leaves no
// process behind. The emulator (moto or LocalStack) stores the functions, mappings and schedules
// but runs and fires none of them, unlike AWS: devstack's local runtime and runner do.
func TestStackRunsTheDeployment(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	ctx := context.Background()
	prefix := awstest.Prefix("jk")

	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: fixture(t, time.Now().Add(3*time.Second)), Prefix: prefix, ModuleDir: "../..", BuildDir: t.TempDir(),
	})

	var (
		mu      sync.Mutex
		batches []esm.BatchReport
		fired   []schedfire.Firing
		invoked []string // "<function> <pid>" per invocation taken
	)
	out := &awstest.SyncBuffer{}
	stack, err := devstack.Start(ctx, devstack.Config{
		AWS: cfg, Deployment: d, Output: out, SchedulerPollInterval: time.Second,
		OnBatch: func(fn string, rep esm.BatchReport) {
			mu.Lock()
			batches = append(batches, rep)
			mu.Unlock()
		},
		OnFire: func(f schedfire.Firing) {
			mu.Lock()
			fired = append(fired, f)
			mu.Unlock()
		},
		OnInvoke: func(function, requestID string, pid int) {
			mu.Lock()
			invoked = append(invoked, function+" "+strconv.Itoa(pid))
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = stack.Stop()
		}
	})
	fn := d.Functions[0]
	require.Equal(t, []string{fn.Name}, stack.Functions())

	q := sqs.NewFromConfig(cfg)
	echo, orders, outQ := d.Queue("EchoQueue2E8F3C41"), d.Queue("OrdersQueue9E8D7C6B"), d.Queue("OutQueue1F2E3D4C")
	for _, body := range []string{"a", "b", "fail"} {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(echo.URL), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	for _, body := range []string{"o1", "o2"} {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(orders.URL), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g1"), MessageDeduplicationId: aws.String(body)})
		require.NoError(t, err)
	}

	// Everything but "fail" comes out of the function onto the out queue.
	want := []string{"a", "b", "o1", "o2", "scheduled-once"}
	var got []string
	deadline := time.Now().Add(90 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		r, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(outQ.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		require.NoError(t, err)
		for _, m := range r.Messages {
			got = append(got, aws.ToString(m.Body))
		}
	}
	sort.Strings(got)
	require.Equal(t, want, got, "function output:\n%s", out.String())

	// The function saw the environment the deployment resolved, plus Lambda's own variables.
	item, err := dynamodb.NewFromConfig(cfg).GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.Tables[0].Name),
		Key:       map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "echo:o1"}},
	})
	require.NoError(t, err)
	require.Equal(t, orders.ARN, item.Item["source"].(*ddbtypes.AttributeValueMemberS).Value)
	require.Equal(t, "g1.", item.Item["group"].(*ddbtypes.AttributeValueMemberS).Value)
	var env map[string]string
	require.NoError(t, json.Unmarshal([]byte(item.Item["env"].(*ddbtypes.AttributeValueMemberS).Value), &env))
	for k, v := range fn.Env {
		require.Equal(t, v, env[k], k)
	}
	require.Equal(t, fn.Name, env["AWS_LAMBDA_FUNCTION_NAME"])
	require.Equal(t, awstest.Endpoint(), env["AWS_ENDPOINT_URL"])
	require.Equal(t, "10", env["AWS_LAMBDA_FUNCTION_TIMEOUT"])
	require.Equal(t, "256", env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])

	mu.Lock()
	require.Len(t, fired, 1)
	require.Equal(t, "scheduled-once", fired[0].Body)
	require.NoError(t, fired[0].Err)
	mu.Unlock()
	// The batch holding "fail" is reported once the mapping has settled it, which may come after
	// the other messages' output is read (and, on a loaded machine, after a retry: "fail" comes
	// back after the queue's visibility timeout and is partial again).
	partials := func() (n, failed int) {
		mu.Lock()
		defer mu.Unlock()
		for _, rep := range batches {
			if rep.Verdict == esm.Partial {
				n++
				failed += len(rep.Failed)
			}
		}
		return n, failed
	}
	require.Eventually(t, func() bool { n, _ := partials(); return n > 0 }, time.Minute, 100*time.Millisecond, "the batch holding \"fail\" was partial")
	n, failed := partials()
	require.Equal(t, n, failed, "each partial batch failed one message: \"fail\"")
	mu.Lock()
	invokedNow, settled := append([]string(nil), invoked...), len(batches)
	mu.Unlock()
	// Every settled batch was an invocation OnInvoke saw (one may be under way as well).
	require.GreaterOrEqual(t, len(invokedNow), settled, "OnInvoke once per invocation")
	for _, inv := range invokedNow {
		name, pid, _ := strings.Cut(inv, " ")
		require.Equal(t, fn.Name, name)
		require.NotEqual(t, "0", pid)
	}
	require.Contains(t, out.String(), "["+fn.Name+"] ", "function output is prefixed")

	pids := stack.PIDs()
	require.NotEmpty(t, pids)
	start := time.Now()
	require.NoError(t, stack.Stop())
	stopped = true
	t.Logf("stop took %s", time.Since(start))
	for _, pid := range pids {
		require.True(t, procgroup.Gone(pid), "process %d outlived Stop", pid)
	}
	require.Empty(t, stack.PIDs())
	select {
	case <-stack.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	var total esm.Stats
	for _, s := range stack.Stats() {
		total.Deleted += s.Deleted
	}
	require.Equal(t, int64(5), total.Deleted)
}

// A function's reserved concurrency caps its execution environments offline as on AWS: with
// ReservedConcurrentExecutions 1, the echo function's two mappings (the Echo queue's at most 2
// at once, the Orders queue's up to 5) share one process, however many batches wait; without a
// reservation the same run takes more than one.
func TestReservedConcurrencyCapsTheEnvironments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		reserved int
		check    func(t *testing.T, processes int)
	}{
		{1, func(t *testing.T, n int) { require.Equal(t, 1, n, "one execution environment served both mappings") }},
		{0, func(t *testing.T, n int) { require.Greater(t, n, 1, "without a reservation, several environments") }},
	} {
		t.Run("reserved="+strconv.Itoa(c.reserved), func(t *testing.T) {
			t.Parallel()
			c.check(t, processesFor(t, c.reserved))
		})
	}
}

// processesFor runs 30 messages through each of the echo function's two mappings, the function
// deployed with ReservedConcurrentExecutions reserved (0: none), and returns how many processes
// served them.
func processesFor(t *testing.T, reserved int) int {
	cfg := awstest.Config(t)
	ctx := context.Background()
	d := deploytest.Deploy(t, cfg, &deploy.Options{
		CDKOut: fixtureWith(t, time.Now().Add(time.Hour), func(res map[string]any) {
			if reserved > 0 {
				res["EchoFunction8D469E43"].(map[string]any)["Properties"].(map[string]any)["ReservedConcurrentExecutions"] = reserved
			}
		}),
		Prefix: awstest.Prefix("jk"), ModuleDir: "../..", BuildDir: t.TempDir(),
	})
	require.Equal(t, reserved, d.Functions[0].ReservedConcurrency)
	var (
		mu   sync.Mutex
		pids = map[int]bool{}
	)
	stack, err := devstack.Start(ctx, devstack.Config{
		AWS: cfg, Deployment: d, Output: &awstest.SyncBuffer{}, NoScheduler: true,
		OnInvoke: func(_, _ string, pid int) {
			mu.Lock()
			pids[pid] = true
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stack.Stop() })
	q := sqs.NewFromConfig(cfg)
	echo, orders, outQ := d.Queue("EchoQueue2E8F3C41"), d.Queue("OrdersQueue9E8D7C6B"), d.Queue("OutQueue1F2E3D4C")
	const perQueue = 30
	for i := range perQueue {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(echo.URL), MessageBody: aws.String("e" + strconv.Itoa(i))})
		require.NoError(t, err)
		_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(orders.URL), MessageBody: aws.String("o" + strconv.Itoa(i)),
			MessageGroupId: aws.String("g" + strconv.Itoa(i%10)), MessageDeduplicationId: aws.String("o" + strconv.Itoa(i))})
		require.NoError(t, err)
	}
	got := 0
	for deadline := time.Now().Add(2 * time.Minute); got < 2*perQueue && time.Now().Before(deadline); {
		r, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(outQ.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		require.NoError(t, err)
		got += len(r.Messages)
	}
	require.Equal(t, 2*perQueue, got, "every message went through the function")
	mu.Lock()
	defer mu.Unlock()
	return len(pids)
}
