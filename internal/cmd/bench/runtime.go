package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/internal/benchfix"
)

// The runtime benchmark runs one SQS batch of 10 jobs with a no-op worker through
// jobs.NewLambdaHandler(…).HandleSQS again and again, whose SQS client answers in-process
// (benchfix.NewBenchRunner): it measures jobkit's own cost per message — envelope and args
// decoding, dispatch, concurrency, outcomes, the metrics line — not the network. It needs no
// emulator. The same batch every time keeps it in the CPU caches: the canonical figure,
// runtime_overhead_ns_per_msg, is the powertools benchmark's, on 10,000 distinct records.
//
//	runtime_one_batch_ns_per_msg      wall time per message (best of 5 testing.Benchmark runs)
//	runtime_allocs_per_msg            heap allocations per message
//	runtime_one_batch_cpu_ns_per_msg  process CPU time per message (user+system, all goroutines and
//	                                  the GC): steadier than wall time on a busy machine
func init() {
	register("runtime", 10, benchRuntime)
}

const runtimeBatch = 10

func benchRuntime(ctx context.Context, emit func(string, any)) error {
	run := benchfix.NewBenchRunner(runtimeBatch)
	// A deadline as Lambda gives one: the runtime derives the jobs' context from it.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		return err
	}
	var failed error
	best, allocs := time.Duration(0), int64(0)
	var cpu time.Duration
	var msgs int
	for i := 0; i < 5; i++ {
		c0 := cpuTime()
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			msgs += b.N * runtimeBatch // every run, the probing ones too, as CPU time counts them
			for n := 0; n < b.N; n++ {
				if err := run(ctx); err != nil {
					failed = err
					b.FailNow()
				}
			}
		})
		if failed != nil {
			return failed
		}
		if res.N == 0 {
			return fmt.Errorf("runtime benchmark did not run")
		}
		perMsg := time.Duration(res.NsPerOp() / runtimeBatch)
		if best == 0 || perMsg < best {
			best = perMsg
		}
		allocs = res.AllocsPerOp()
		cpu += cpuTime() - c0
	}
	emit("runtime_one_batch_ns_per_msg", best.Nanoseconds())
	emit("runtime_allocs_per_msg", float64(allocs)/runtimeBatch)
	emit("runtime_one_batch_cpu_ns_per_msg", (cpu / time.Duration(msgs)).Nanoseconds())
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
