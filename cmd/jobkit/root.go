// Command jobkit is the operator CLI of jobkit: queue statistics, dead-lettered jobs (list, show,
// redrive, purge) and enqueueing jobs by hand or in bulk. It works against AWS, LocalStack or the
// offline emulator (--endpoint or AWS_ENDPOINT_URL) and finds the queues in the deployed stack's
// outputs, or takes them from flags. It is a thin layer over package jobs/inspect and the jobs
// producer client. docs/cli.md documents every verb and the --json output.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"
	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/sdkfix"
)

// jsonVersion is the version of every --json document; it changes only when a field changes
// meaning or goes away (new fields may be added within a version).
const jsonVersion = 1

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks a wrong command line (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run runs the CLI with args and returns the exit code. Tests call it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var dx devExit
	if errors.As(err, &dx) {
		return dx.code
	}
	fmt.Fprintf(stderr, "jobkit: %s\n", safeLines(err.Error(), textWidth))
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintln(stderr, "Run 'jobkit --help' for usage.")
		return exitUsage
	}
	return exitError
}

// app holds the global flags and what is built from them.
type app struct {
	endpoint string
	region   string
	stack    string
	queues   []string
	dlq      string

	stdin io.Reader
	cfg   *aws.Config
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "jobkit",
		Short: "Operate jobkit job queues: stats, dead-lettered jobs, redrive, enqueue",
		Long: `jobkit operates the SQS job queues of a jobkit deployment.

Queues come from the deployed stack's outputs (JobkitQueue<Name> and JobkitDlq<Name>
of --stack, default JobkitState), or from --queue/--dlq (a queue URL, a stack output
name, or a queue name). A queue's dead-letter queue is taken from the stack, or from
its RedrivePolicy.

The endpoint is AWS unless --endpoint or AWS_ENDPOINT_URL points elsewhere (LocalStack,
the offline emulator). On a loopback endpoint without credentials in the environment,
jobkit uses the emulator's test credentials.`,
		Example: `  # Depth, in-flight, delayed, oldest age and DLQ depth of every queue of the stack
  jobkit queues

  # The same against the offline emulator, as JSON
  jobkit --endpoint http://127.0.0.1:4566 queues --json

  # What is dead, and why; then send it back after the fix
  jobkit dlq list --queue email
  jobkit dlq show 01JD3Q7X2V8M4N6P8R0T2V4X6Z --queue email
  jobkit dlq redrive --queue email --kind email.send

  # One job: its state; cancel it before it runs, or retry it now
  jobkit job show 01JD3X0Q6S7V9M2D1YB4KQ7E5N
  jobkit job cancel 01JD3X0Q6S7V9M2D1YB4KQ7E5N

  # Recurring schedules, by the name declared in Go
  jobkit schedules list
  jobkit schedules pause nightly-report

  # Enqueue one job, or a file of them
  jobkit enqueue email.send --args '{"to":"a@example.com"}' --queue email
  jobkit enqueue --file jobs.ndjson --queue email`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.endpoint, "endpoint", os.Getenv("AWS_ENDPOINT_URL"), "AWS endpoint URL (LocalStack, the emulator); default $AWS_ENDPOINT_URL, else AWS")
	pf.StringVar(&a.region, "region", "", "AWS region; default $AWS_REGION or the shared config (us-east-1 with --endpoint)")
	pf.StringVar(&a.stack, "stack", cmp.Or(os.Getenv(contract.EnvStack), contract.DefaultStack), "CloudFormation stack whose outputs name the queues; default $"+contract.EnvStack+", else "+contract.DefaultStack)
	pf.StringArrayVarP(&a.queues, "queue", "q", nil, "queue URL or name (repeatable for 'queues'); default: the stack's queues")
	pf.StringVar(&a.dlq, "dlq", "", "dead-letter queue URL or name; default: the queue's (stack output or RedrivePolicy)")

	root.AddCommand(newQueuesCmd(a), newDLQCmd(a), newEnqueueCmd(a), newJobCmd(a), newBatchCmd(a), newSchedulesCmd(a), newConsoleCmd(a), newDevCmd(a), newInitCmd())
	return root
}

// awsConfig loads the AWS configuration once, honouring --endpoint and --region.
func (a *app) awsConfig(ctx context.Context) (aws.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	var opts []func(*config.LoadOptions) error
	region := a.region
	if a.endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(a.endpoint))
		if region == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
			region = "us-east-1"
		}
		if loopback(a.endpoint) && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
			opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
		}
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if a.endpoint != "" && loopback(a.endpoint) {
		opts = append(opts, config.WithAPIOptions([]func(*middleware.Stack) error{sdkfix.NoBodyWriteTo}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	a.cfg = &cfg
	return cfg, nil
}

func loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (a *app) target() inspect.Target {
	return inspect.Target{Stack: a.stack, Queues: a.queues, DLQ: a.dlq}
}

// Widths, in runes, of what the human-readable output shows of a value; --json has it whole.
const (
	idWidth     = 40   // a job id or message id in a table
	kindWidth   = 40   // a kind in a table
	reasonWidth = 24   // a reason in a table
	errorWidth  = 60   // an error in a table
	nameWidth   = 48   // a queue name
	valueWidth  = 200  // a value of 'dlq show'
	lineWidth   = 512  // a line of a report (a failure, a warning)
	textWidth   = 4096 // an error, body or envelope of 'dlq show'; an error message
)

// safe makes a value for the terminal: control characters escaped, at most width runes
// (inspect.Printable). Every value the human-readable output prints goes through safe or
// safeLines: ids, kinds, errors and bodies come from whoever could send a message.
func safe(s string, width int) string { return inspect.Printable(s, width) }

// safeLines is safe for text of several lines (inspect.PrintableLines).
func safeLines(s string, width int) string { return inspect.PrintableLines(s, width) }

// writeJSON writes v as indented JSON and a newline. Job data is untrusted: besides what
// encoding/json escapes, C1 controls and bidirectional formatting characters are written as
// \uXXXX escapes, so the JSON shown on a terminal cannot move the cursor or reorder the text;
// decoded, the values are unchanged.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeUnsafeRunes(buf.Bytes()))
	return err
}

// escapeUnsafeRunes rewrites C1 controls (U+0080–U+009F) and bidirectional formatting characters
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) in JSON text as \uXXXX escapes. They
// can only stand inside strings, where the escape means the same.
func escapeUnsafeRunes(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if unsafeRune(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

func unsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == 0x61c || r == 0x200e || r == 0x200f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
