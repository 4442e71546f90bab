// Command bench measures jobkit and prints each figure as a `BENCH key=value` line, with ratios
// where a peer exists. `make bench` runs it against the emulator; `-only name` runs one benchmark.
// A whole run also prints when it started (bench_started), the Go version (bench_go), the load
// average at its start (bench_load_avg) and its wall time (bench_wall_s). `-doc PAGE -from FILE`
// regenerates the figures of docs/benchmarks.md from a run's output (see doc.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// benchmark prints its figures through emit.
type benchmark struct {
	name  string
	order int
	run   func(ctx context.Context, emit func(key string, value any)) error
}

var benchmarks []benchmark

func register(name string, order int, run func(ctx context.Context, emit func(key string, value any)) error) {
	benchmarks = append(benchmarks, benchmark{name: name, order: order, run: run})
}

// emit prints one figure.
func emit(key string, value any) {
	switch v := value.(type) {
	case float64:
		fmt.Printf("BENCH %s=%.4g\n", key, v)
	default:
		fmt.Printf("BENCH %s=%v\n", key, v)
	}
}

func main() {
	if fn := os.Getenv(benchFunctionEnv); fn != "" {
		run, ok := benchFunctions[fn]
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: no function %q\n", fn)
			os.Exit(1)
		}
		run()
		return
	}
	only := flag.String("only", "", "comma-separated benchmark names to run (default all)")
	doc := flag.String("doc", "", "regenerate this page's figures from -from instead of running")
	from := flag.String("from", ".run/bench.out", "with -doc: a run's output (its BENCH lines)")
	flag.Parse()
	if *doc != "" {
		if err := writeDoc(*doc, *from, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	sort.SliceStable(benchmarks, func(i, j int) bool { return benchmarks[i].order < benchmarks[j].order })
	started := time.Now()
	emit("bench_started", started.UTC().Format(time.RFC3339))
	emit("bench_go", runtime.Version())
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		emit("bench_load_avg", strings.Join(strings.Fields(string(load))[:3], " "))
	}
	failed := false
	for _, b := range benchmarks {
		if len(want) > 0 && !want[b.name] {
			continue
		}
		if err := b.run(context.Background(), emit); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", b.name, err)
			failed = true
		}
	}
	emit("bench_wall_s", int64(time.Since(started).Seconds()+0.5))
	if failed {
		os.Exit(1)
	}
}
