// Command bench measures jobkit and prints each figure as a `BENCH key=value` line, with ratios
// where a peer exists. `make bench` runs it against the emulator; `-only name` runs one benchmark.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
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
	flag.Parse()
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	sort.SliceStable(benchmarks, func(i, j int) bool { return benchmarks[i].order < benchmarks[j].order })
	failed := false
	for _, b := range benchmarks {
		if len(want) > 0 && !want[b.name] {
			continue
		}
		emit := func(key string, value any) {
			switch v := value.(type) {
			case float64:
				fmt.Printf("BENCH %s=%.4g\n", key, v)
			default:
				fmt.Printf("BENCH %s=%v\n", key, v)
			}
		}
		if err := b.run(context.Background(), emit); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", b.name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
