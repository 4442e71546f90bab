package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The Powertools benchmark compares jobkit's runtime with Powertools for AWS Lambda (Python) on the
// same 10,000 SQS records in 1,000 batches of 10, in the same run. The records are generated once
// (benchfix.SampleEvents: deterministic) and written to one JSON file; each side decodes that file
// before timing, as its Lambda runtime would hand it decoded events.
//
//   - jobkit: jobs.NewSQSHandler with a no-op typed worker; its SQS client answers in-process. A
//     batch that succeeds makes no SQS call: a call (a job retried or dead-lettered) fails the
//     run, as a listed record does. The envelope and its args decode into Go structs.
//   - Powertools: BatchProcessor(EventType.SQS) + process_partial_response; the record handler
//     parses the body with Powertools' parser into a pydantic envelope model with an args
//     sub-model and calls a no-op (powertools/handler.py, timed by powertools/bench.py).
//   - The floor: json.Unmarshal of each body into jobs.Envelope, then of its args into the typed
//     struct — what any Go consumer of these messages pays at least.
//
// Each side runs one untimed warm-up pass, then 31 repetitions over all 10,000 records, each after
// a garbage collection. A figure is the best repetition's wall time divided by 10,000: on a shared
// machine the fastest repetition is the one least disturbed by other processes, for both sides
// alike. The medians and the process CPU time per message are printed too.
//
//	runtime_overhead_ns_per_msg     jobkit on these records: the canonical runtime figure (the
//	                                runtime benchmark's runtime_one_batch_ns_per_msg repeats one batch)
//	powertools_overhead_ns_per_msg  Powertools on these records
//	runtime_speedup_vs_powertools   powertools / jobkit
//	decode_floor_ns_per_msg         bare json.Unmarshal of envelope and args
//	runtime_vs_decode_floor         jobkit / floor
//	*_median_ns_per_msg             the median repetitions (runtime_overhead_median_ns_per_msg, ...)
//	*_cpu_ns_per_msg                process CPU time (user+system, every thread) per message over
//	                                the timed repetitions (runtime_cpu_ns_per_msg, ...)
func init() {
	register("powertools", 30, benchPowertools)
}

const (
	compareRecords     = 10000
	compareBatch       = 10
	compareRepetitions = 31
)

func benchPowertools(ctx context.Context, emit func(string, any)) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	python, err := peerPython(root)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(compareEvents())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "jobkit-bench-powertools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	eventsFile := filepath.Join(dir, "events.json")
	if err := os.WriteFile(eventsFile, raw, 0o644); err != nil {
		return err
	}
	var evs []events.SQSEvent
	if err := json.Unmarshal(raw, &evs); err != nil {
		return fmt.Errorf("decode the events file: %w", err)
	}

	rt, err := timeRuntime(ctx, evs)
	if err != nil {
		return err
	}
	floor, err := timeDecodeFloor(evs)
	if err != nil {
		return err
	}
	peer, err := timePowertools(ctx, python, peerDir(root), eventsFile)
	if err != nil {
		return err
	}
	ns := func(v float64) int64 { return int64(v + 0.5) }
	emit("runtime_overhead_ns_per_msg", ns(rt.best))
	emit("powertools_overhead_ns_per_msg", ns(peer.best))
	emit("runtime_speedup_vs_powertools", peer.best/rt.best)
	emit("decode_floor_ns_per_msg", ns(floor.best))
	emit("runtime_vs_decode_floor", rt.best/floor.best)
	emit("runtime_overhead_median_ns_per_msg", ns(rt.median))
	emit("powertools_overhead_median_ns_per_msg", ns(peer.median))
	emit("decode_floor_median_ns_per_msg", ns(floor.median))
	emit("runtime_cpu_ns_per_msg", ns(rt.cpu))
	emit("powertools_cpu_ns_per_msg", ns(peer.cpu))
	emit("decode_floor_cpu_ns_per_msg", ns(floor.cpu))
	return nil
}

// compareTiming is a side's ns per message: the best and median repetitions (wall time) and the
// process CPU time over all timed repetitions.
type compareTiming struct{ best, median, cpu float64 }

// summarize makes a compareTiming from per-repetition wall times and the total CPU time, in ns per
// message.
func summarize(wall []float64, cpuTotal float64) compareTiming {
	best := wall[0]
	for _, w := range wall {
		best = min(best, w)
	}
	return compareTiming{best: best, median: median(wall), cpu: cpuTotal / float64(len(wall))}
}

// compareEvents returns the 10,000 sample records in batches of 10, with the fields a real SQS
// event carries (an MD5 of the body, empty message attributes), so a peer that validates whole
// records sees a valid event.
func compareEvents() []events.SQSEvent {
	evs := benchfix.SampleEvents(compareRecords, compareBatch)
	for i := range evs {
		for j := range evs[i].Records {
			r := &evs[i].Records[j]
			sum := md5.Sum([]byte(r.Body))
			r.Md5OfBody = hex.EncodeToString(sum[:])
			r.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
	}
	return evs
}

// inProcessSQS answers every SQS call with an empty success, in process, and counts the calls.
// A batch whose jobs all succeed makes none: a call means a job was retried or dead-lettered.
type inProcessSQS struct{ calls *atomic.Int64 }

func (t inProcessSQS) Do(req *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader("{}")),
		Request:    req,
	}, nil
}

// timeRuntime times jobkit's runtime over evs.
func timeRuntime(ctx context.Context, evs []events.SQSEvent) (compareTiming, error) {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[benchfix.SampleArgs](func(context.Context, *jobs.Job[benchfix.SampleArgs]) error { return nil }))
	var calls atomic.Int64
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://sqs.invalid"),
		Credentials:  aws.AnonymousCredentials{},
		HTTPClient:   inProcessSQS{calls: &calls},
	})
	cfg := jobstest.Config(client)
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	handler := jobs.NewSQSHandler(workers, cfg)
	// A deadline as Lambda gives one: the runtime derives the jobs' context from it.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	pass := func() error {
		for _, ev := range evs {
			resp, err := handler(ctx, ev)
			if err != nil {
				return err
			}
			if len(resp.BatchItemFailures) > 0 {
				return fmt.Errorf("jobkit runtime: %d records of a batch failed", len(resp.BatchItemFailures))
			}
		}
		if n := calls.Load(); n > 0 {
			return fmt.Errorf("jobkit runtime: %d SQS calls: some jobs did not succeed (dead-lettered or retried)", n)
		}
		return nil
	}
	return timePasses(pass)
}

// decodeSink keeps the floor's decoded values alive.
var decodeSink struct {
	env  jobs.Envelope
	args benchfix.SampleArgs
}

// timeDecodeFloor times decoding every body with encoding/json.
func timeDecodeFloor(evs []events.SQSEvent) (compareTiming, error) {
	pass := func() error {
		for i := range evs {
			for j := range evs[i].Records {
				var env jobs.Envelope
				if err := json.Unmarshal([]byte(evs[i].Records[j].Body), &env); err != nil {
					return err
				}
				var args benchfix.SampleArgs
				if err := json.Unmarshal(env.Args, &args); err != nil {
					return err
				}
				decodeSink.env, decodeSink.args = env, args
			}
		}
		return nil
	}
	return timePasses(pass)
}

// timePasses runs pass (over all the records) once untimed, then compareRepetitions times, each
// after a garbage collection.
func timePasses(pass func() error) (compareTiming, error) {
	if err := pass(); err != nil {
		return compareTiming{}, err
	}
	wall := make([]float64, compareRepetitions)
	var cpu time.Duration
	for i := range wall {
		runtime.GC()
		c0, start := cpuTime(), time.Now()
		if err := pass(); err != nil {
			return compareTiming{}, err
		}
		wall[i] = float64(time.Since(start).Nanoseconds()) / compareRecords
		cpu += cpuTime() - c0
	}
	return summarize(wall, float64(cpu.Nanoseconds())/compareRecords), nil
}

// timePowertools runs powertools/bench.py on the events file: the same repetitions, in Python.
func timePowertools(ctx context.Context, python, dir, eventsFile string) (compareTiming, error) {
	cmd := exec.CommandContext(ctx, python, filepath.Join(dir, "bench.py"), eventsFile, fmt.Sprint(compareRepetitions))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return compareTiming{}, fmt.Errorf("powertools peer: %w", err)
	}
	var res struct {
		Records     int       `json:"records"`
		NsPerMsg    []float64 `json:"ns_per_msg"`
		CPUNsPerMsg float64   `json:"cpu_ns_per_msg"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return compareTiming{}, fmt.Errorf("powertools peer: read its result %q: %w", out, err)
	}
	if res.Records != compareRecords || len(res.NsPerMsg) != compareRepetitions {
		return compareTiming{}, fmt.Errorf("powertools peer: ran %d records × %d repetitions, want %d × %d",
			res.Records, len(res.NsPerMsg), compareRecords, compareRepetitions)
	}
	return summarize(res.NsPerMsg, res.CPUNsPerMsg*float64(len(res.NsPerMsg))), nil
}
