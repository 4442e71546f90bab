package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// enqueueLine is one line of an --file NDJSON file (docs/cli.md).
type enqueueLine struct {
	Kind  string          `json:"kind"`
	Args  json.RawMessage `json:"args"`
	ID    string          `json:"id"`
	Key   string          `json:"key"`
	Group string          `json:"group"`
	Dedup string          `json:"dedup"`
	Delay string          `json:"delay"` // Go duration: "90s", "10m"
	Queue string          `json:"queue"` // URL or name; default --queue
}

// LineError is a line of an --file the CLI refused before sending anything.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// enqueueBatchSize is the number of jobs handed to one EnqueueBatch call (it makes SendMessageBatch
// calls of 10); progress advances after each.
const enqueueBatchSize = 100

func newEnqueueCmd(a *app) *cobra.Command {
	var (
		argsJSON string
		file     string
		progress string
		opts     jobs.EnqueueOpts
	)
	cmd := &cobra.Command{
		Use:   "enqueue KIND --args JSON | --file FILE",
		Short: "Enqueue a job, or a file of jobs (NDJSON) with progress",
		Long: `Enqueue one job of KIND with --args (a JSON value, default {}), or every line of an
NDJSON file with --file (- for stdin), through the jobs producer client (EnqueueBatch:
SendMessageBatch calls of 10).

A line of the file is
  {"kind":"email.send","args":{"to":"a@example.com"},"id":"","key":"","group":"","dedup":"","delay":"90s","queue":""}
where only kind is required; queue (URL or name) defaults to --queue, delay is a Go
duration up to 15m (Standard queues), group is required on FIFO queues. The whole file
is checked before anything is sent: a bad line sends nothing.

Progress goes to stderr (a bar on a terminal, plain lines otherwise); the final count to
stdout.`,
		Example: `  jobkit enqueue email.send --args '{"to":"a@example.com"}' --queue email
  jobkit enqueue ledger.post --args '{"account":"42","cents":100}' --group 42 --queue ledger
  jobkit enqueue report.build --delay 10m --queue reports
  jobkit enqueue --file jobs.ndjson --queue email
  generate-jobs | jobkit enqueue --file - --queue email --progress plain`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			switch {
			case file != "" && len(args) > 0:
				return usageError{errors.New("give KIND or --file, not both")}
			case file == "" && len(args) != 1:
				return usageError{errors.New("enqueue takes one KIND (or --file FILE)")}
			}
			if file != "" {
				return a.enqueueFile(ctx, cmd, file, progress)
			}
			if !json.Valid([]byte(argsJSON)) {
				return usageError{fmt.Errorf("--args is not valid JSON: %q", argsJSON)}
			}
			client, err := a.producer(ctx)
			if err != nil {
				return err
			}
			res, err := client.Enqueue(ctx, jobs.RawArgs{KindName: args[0], JSON: json.RawMessage(argsJSON)}, &opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "enqueued %s job %s to %s (message %s)", res.Kind, res.ID, jobs.QueueName(res.QueueURL), res.MessageID)
			if !res.DeliverAt.IsZero() {
				fmt.Fprintf(cmd.OutOrStdout(), ", visible at %s", res.DeliverAt.Format(time.RFC3339))
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&argsJSON, "args", "{}", "the job's args as JSON")
	f.StringVar(&opts.ID, "id", "", "job id (default: a new ULID)")
	f.StringVar(&opts.Key, "key", "", "idempotency key (default: the job id)")
	f.StringVar(&opts.GroupID, "group", "", "FIFO message group id (required on FIFO queues)")
	f.StringVar(&opts.DedupID, "dedup", "", "FIFO deduplication id (default: the job id)")
	f.DurationVar(&opts.Delay, "delay", 0, "deliver after this delay (up to 15m, Standard queues)")
	f.StringVar(&file, "file", "", "enqueue every line of this NDJSON file (- for stdin)")
	f.StringVar(&progress, "progress", progressAuto, "progress display on stderr for --file: auto (bar on a terminal), bar, plain, none")
	return cmd
}

// producer returns a jobs client whose default queue is the one the flags name.
func (a *app) producer(ctx context.Context) (*jobs.Client, error) {
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	one, err := a.one(ctx, inspect.New(cfg), false)
	if err != nil {
		return nil, err
	}
	q := one.URL
	if q == "" {
		return nil, fmt.Errorf("%w: no job queue to send to (pass --queue)", inspect.ErrNoQueues)
	}
	return jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: q})
}

// readJobs parses and checks an NDJSON file of jobs. Every bad line is reported (the first 20).
func readJobs(r io.Reader, fifo func(queue string) bool) ([]enqueueLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), jobs.MaxMessageSize+4096)
	var (
		lines []enqueueLine
		errs  []error
		n     int
	)
	bad := func(err error) {
		if len(errs) < 20 {
			errs = append(errs, &LineError{Line: n, Err: err})
		}
	}
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l enqueueLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			bad(fmt.Errorf("not a job object: %w", err))
			continue
		}
		switch {
		case l.Kind == "":
			bad(jobs.ErrEmptyKind)
			continue
		case len(l.Args) > 0 && !json.Valid(l.Args):
			bad(fmt.Errorf("%w: args are not valid JSON", jobs.ErrEncodeArgs))
			continue
		}
		if l.Delay != "" {
			d, err := time.ParseDuration(l.Delay)
			switch {
			case err != nil || d < 0:
				bad(fmt.Errorf("%w: %q (want a Go duration such as 90s)", jobs.ErrInvalidDelay, l.Delay))
				continue
			case d > jobs.MaxSQSDelay:
				bad(fmt.Errorf("%w: %s", jobs.ErrDelayTooLong, d))
				continue
			case d > 0 && fifo(l.Queue):
				bad(jobs.ErrDelayOnFIFO)
				continue
			}
		}
		if fifo(l.Queue) && l.Group == "" {
			bad(jobs.ErrGroupRequired)
			continue
		}
		if !fifo(l.Queue) && l.Dedup != "" {
			bad(jobs.ErrDedupOnStandard)
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read jobs: line %d: %w", n+1, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nothing enqueued: %w", errors.Join(errs...))
	}
	return lines, nil
}

func (a *app) enqueueFile(ctx context.Context, cmd *cobra.Command, file, progress string) error {
	rep, err := newReporter(cmd.ErrOrStderr(), progress, "enqueue")
	if err != nil {
		return err
	}
	var r io.Reader = cmd.InOrStdin()
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	in := inspect.New(cfg)

	// Queue names are resolved once each; the default queue only if a line needs it.
	urls := map[string]string{}
	var resolveErr error
	queueOf := func(ref string) string {
		if u, ok := urls[ref]; ok {
			return u
		}
		var u string
		var err error
		if ref == "" {
			var q inspect.Queue
			if q, err = a.one(ctx, in, false); err == nil {
				u = q.URL
			}
		} else {
			u, err = a.queueURLOf(ctx, in, ref)
		}
		if err != nil && resolveErr == nil {
			resolveErr = err
		}
		urls[ref] = u
		return u
	}
	lines, err := readJobs(r, func(ref string) bool { return jobs.IsFIFOQueue(queueOf(ref)) })
	if resolveErr != nil {
		return resolveErr
	}
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return errors.New("nothing to enqueue: the file has no jobs")
	}
	// Every job names its queue explicitly (EnqueueOpts.Queue); the default is only required.
	client, err := jobs.NewClient(sqs.NewFromConfig(cfg), jobs.ClientOptions{DefaultQueueURL: urls[lines[0].Queue]})
	if err != nil {
		return err
	}

	start := time.Now()
	total := int64(len(lines))
	var done, failed int64
	var firstErrs []string
	rep.update(0, total, "enqueued")
	for off := 0; off < len(lines); off += enqueueBatchSize {
		if ctx.Err() != nil {
			break
		}
		chunk := lines[off:min(off+enqueueBatchSize, len(lines))]
		batch := make([]jobs.BatchJob, len(chunk))
		for i, l := range chunk {
			var delay time.Duration
			if l.Delay != "" {
				delay, _ = time.ParseDuration(l.Delay)
			}
			batch[i] = jobs.BatchJob{
				Args: jobs.RawArgs{KindName: l.Kind, JSON: l.Args},
				Opts: &jobs.EnqueueOpts{ID: l.ID, Key: l.Key, GroupID: l.Group, DedupID: l.Dedup, Delay: delay, Queue: urls[l.Queue]},
			}
		}
		results, _ := client.EnqueueBatch(ctx, batch)
		for i, r := range results {
			if r.Err != nil {
				failed++
				if len(firstErrs) < 20 {
					firstErrs = append(firstErrs, fmt.Sprintf("job %d (%s %s): %v", off+i+1, r.Kind, r.ID, r.Err))
				}
				continue
			}
			done++
		}
		detail := "enqueued"
		if failed > 0 {
			detail = fmt.Sprintf("enqueued, %d failed", failed)
		}
		rep.update(done+failed, total, detail)
	}
	rep.finish()
	for _, e := range firstErrs {
		fmt.Fprintln(cmd.ErrOrStderr(), "failed:", e)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "enqueued %d of %d jobs (%d failed) in %s\n", done, total, failed, time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d jobs: %w", done+failed, total, ctx.Err())
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs not enqueued", failed, total)
	}
	return nil
}
