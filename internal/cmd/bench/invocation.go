package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The invocation benchmark measures what a user pays for: the whole invocation, the event's
// payload bytes in and the response's bytes out, on the powertools benchmark's 10,000 records
// (1,000 payloads of 10), in the same run.
//
//   - raw: jobs.NewLambdaHandler (the functions' handler) with a no-op worker: decodes the event
//     itself and writes the response.
//   - typed: jobs.NewLambdaHandler(…).HandleSQS behind aws-lambda-go's typed handler (lambda.NewHandler(fn).Invoke),
//     which decodes the event into events.SQSEvent with encoding/json and marshals the response.
//   - naive: an aws-lambda-go typed handler that only json.Unmarshals each body into the envelope
//     with typed args and reports no failures — less than any real consumer does.
//   - powertools: Python's json.loads of the payload, BatchProcessor with the parser's pydantic
//     model (powertools/handler.py), json.dumps of the response (powertools/invocation.py).
//
// A round times one pass of each over all 1,000 payloads, one after another, each after a
// garbage collection; invocationRounds rounds alternate them, so a load that comes and goes on a
// shared machine falls on every side alike. A pass is timed in process CPU time (user+system, all
// threads, the GC's included): on a shared machine wall time moved 10× from pass to pass, CPU
// time far less, and a Lambda function's CPU is its own. A *_ns_per_msg figure is a side's
// median pass; a ratio is the median of the rounds' ratios, printed with their spread (min–max
// over the rounds).
//
//	invocation_ns_per_msg, invocation_typed_ns_per_msg, invocation_naive_ns_per_msg,
//	invocation_powertools_ns_per_msg
//	invocation_speedup_vs_powertools   powertools / raw (target ≥ 15)
//	invocation_vs_naive                raw / naive (target ≤ 0.5)
//	invocation_typed_vs_raw            typed / raw: what the raw handler saves
//	invocation_heartbeat_batches_share the share of raw and typed batches that made a heartbeat call
func init() {
	register("invocation", 32, benchInvocation)
}

const invocationRounds = 9

func benchInvocation(ctx context.Context, emit func(string, any)) error {
	root, python, dir, err := peerWorkdir("invocation")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "payloads.jsonl")
	payloads, err := writePayloads(file)
	if err != nil {
		return err
	}
	peer, err := startInvocationPeer(ctx, python, peerDir(root), file)
	if err != nil {
		return err
	}
	defer peer.stop()

	// A deadline as Lambda gives one: the runtime derives the jobs' context from it.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	var calls atomic.Int64
	sides := []struct {
		name string
		h    lambda.Handler
	}{
		{"raw", jobs.NewLambdaHandler(noopWorkers(), benchConfig(&calls))},
		{"typed", lambda.NewHandler(jobs.NewLambdaHandler(noopWorkers(), benchConfig(&calls)).HandleSQS)},
		{"naive", lambda.NewHandler(naiveHandler)},
	}
	passes := make([][]float64, len(sides)+1) // the sides', then powertools'
	heartbeats.Store(0)
	for round := -1; round < invocationRounds; round++ {
		for k, side := range sides {
			ns, err := invocationPass(ctx, side.h, payloads, &calls)
			if err != nil {
				return fmt.Errorf("%s: %w", side.name, err)
			}
			if round >= 0 { // round -1 warms up
				passes[k] = append(passes[k], ns)
			}
		}
		if round >= 0 {
			ns, err := peer.pass()
			if err != nil {
				return err
			}
			passes[len(sides)] = append(passes[len(sides)], ns)
		}
	}
	raw, typed, naive, pt := passes[0], passes[1], passes[2], passes[3]
	ns := func(xs []float64) int64 { return int64(median(xs) + 0.5) }
	emit("invocation_ns_per_msg", ns(raw))
	emit("invocation_typed_ns_per_msg", ns(typed))
	emit("invocation_naive_ns_per_msg", ns(naive))
	emit("invocation_powertools_ns_per_msg", ns(pt))
	emitRatio(emit, "invocation_speedup_vs_powertools", pt, raw)
	emitRatio(emit, "invocation_vs_naive", raw, naive)
	emitRatio(emit, "invocation_typed_vs_raw", typed, raw)
	// Batches whose first heartbeat (due at once, see NewLambdaHandler) ran before they ended: on a
	// loaded machine the watchdog's timer often fires inside a batch, and the call costs CPU.
	emit("invocation_heartbeat_batches_share", float64(heartbeats.Load())/float64(2*(invocationRounds+1)*len(payloads)))
	return nil
}

// writePayloads marshals the shared records' events as Lambda sends them and writes them to
// file, one payload a line, for the Python peer.
func writePayloads(file string) ([][]byte, error) {
	evs := compareEvents()
	payloads := make([][]byte, len(evs))
	var jsonl bytes.Buffer
	for i := range evs {
		var err error
		if payloads[i], err = json.Marshal(evs[i]); err != nil {
			return nil, err
		}
		jsonl.Write(payloads[i])
		jsonl.WriteByte('\n')
	}
	return payloads, os.WriteFile(file, jsonl.Bytes(), 0o644)
}

// invocationPass invokes h on every payload and returns the process CPU time per message.
func invocationPass(ctx context.Context, h lambda.Handler, payloads [][]byte, calls *atomic.Int64) (float64, error) {
	runtime.GC()
	start := cpuTime()
	for _, p := range payloads {
		out, err := h.Invoke(ctx, p)
		if err != nil {
			return 0, err
		}
		if string(out) != `{"batchItemFailures":[]}` {
			return 0, fmt.Errorf("a batch reported failures: %s", out)
		}
	}
	elapsed := cpuTime() - start
	if n := calls.Load(); n > 0 {
		return 0, fmt.Errorf("%d dead-letter sends: some jobs did not succeed", n)
	}
	return float64(elapsed.Nanoseconds()) / compareRecords, nil
}

// noopWorkers runs SampleArgs jobs with a no-op worker.
func noopWorkers() *jobs.Workers {
	w := jobs.NewWorkers()
	jobs.AddWorker(w, jobs.WorkFunc[benchfix.SampleArgs](func(context.Context, *jobs.Job[benchfix.SampleArgs]) error { return nil }))
	return w
}

// benchConfig is a runtime config whose SQS client answers in process and counts the
// dead-letter sends. A retry also lists its record, which invocationPass checks; a heartbeat
// (when the machine is so loaded that a batch outlives the watchdog's first tick) is the
// runtime's own work and is not counted.
func benchConfig(calls *atomic.Int64) jobs.Config {
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://sqs.invalid"),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   sendCounter{calls: calls},
	})
	cfg := jobstest.Config(client)
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	return cfg
}

// naiveEnvelope is the envelope with typed args, as a consumer with no runtime decodes it.
type naiveEnvelope struct {
	V          int                 `json:"v"`
	ID         string              `json:"id"`
	Kind       string              `json:"kind"`
	Args       benchfix.SampleArgs `json:"args"`
	EnqueuedAt time.Time           `json:"enqueued_at"`
	Key        string              `json:"key,omitempty"`
	Trace      string              `json:"trace,omitempty"`
}

// naiveHandler decodes each body and does nothing else.
func naiveHandler(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	for i := range ev.Records {
		var env naiveEnvelope
		if err := json.Unmarshal([]byte(ev.Records[i].Body), &env); err != nil {
			return events.SQSEventResponse{}, err
		}
		runtime.KeepAlive(&env)
	}
	return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
}

// peerProcess is a Python peer script that runs passes on request: it prints "ready", then
// answers each "run" line with a line of figures for one pass (the first: ns per message).
type peerProcess struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// invocationPeer is powertools/invocation.py, running passes on request.
type invocationPeer = peerProcess

func startInvocationPeer(ctx context.Context, python, dir, file string) (*invocationPeer, error) {
	return startPeer(ctx, python, filepath.Join(dir, "invocation.py"), file)
}

func startPeer(ctx context.Context, python, script string, args ...string) (*peerProcess, error) {
	cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("powertools peer: %w", err)
	}
	p := &peerProcess{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := p.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		p.stop()
		return nil, fmt.Errorf("powertools peer %s did not start: %q %v", filepath.Base(script), line, err)
	}
	return p, nil
}

// pass runs one pass in the peer and returns its ns per message.
func (p *peerProcess) pass() (float64, error) {
	f, err := p.passFigures()
	if err != nil {
		return 0, err
	}
	return f[0], nil
}

// passFigures runs one pass in the peer and returns the figures it printed.
func (p *peerProcess) passFigures() ([]float64, error) {
	if _, err := io.WriteString(p.in, "run\n"); err != nil {
		return nil, fmt.Errorf("powertools peer: %w", err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("powertools peer: %w", err)
	}
	var out []float64
	for _, f := range strings.Fields(line) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("powertools peer: %q: %w", line, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("powertools peer: empty answer")
	}
	return out, nil
}

func (p *peerProcess) stop() {
	p.in.Close()
	_ = p.cmd.Wait()
}

// sendCounter answers every SQS call with an empty success, in process, and counts the sends
// (calls) and the heartbeats (heartbeats: visibility changes, as no record is retried).
type sendCounter struct{ calls *atomic.Int64 }

// heartbeats counts the runtime's heartbeat calls over the benchmark.
var heartbeats atomic.Int64

func (t sendCounter) Do(req *http.Request) (*http.Response, error) {
	switch target := req.Header.Get("X-Amz-Target"); {
	case strings.HasPrefix(target, "AmazonSQS.SendMessage"):
		t.calls.Add(1)
	case strings.HasPrefix(target, "AmazonSQS.ChangeMessageVisibility"):
		heartbeats.Add(1)
	}
	return inProcessSQS{calls: new(atomic.Int64)}.Do(req)
}
