// Command conformance runs the conformance suite (localstack/conformance) against one endpoint
// and prints a line per failure and known difference, then the verdict:
//
//	CONFORMANCE emulator=<name> passed=<n> failed=<n> known_differences=<n>
//
// It exits 1 when a check failed (a listed known difference the emulator no longer shows counts
// as a failure). `make conformance` runs it against moto, LocalStack, ElasticMQ and DynamoDB Local.
//
//	go run ./localstack/cmd/conformance -emulator moto -endpoint http://127.0.0.1:4566 -services sqs,dynamodb
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/localstack/conformance"
	"github.com/jobkit-go/jobkit/localstack/emulator"
)

func main() {
	name := flag.String("emulator", "", "the emulator's name, as KnownDifferences spells it (moto, localstack, elasticmq, dynamodb-local)")
	endpoint := flag.String("endpoint", os.Getenv("AWS_ENDPOINT_URL"), "the endpoint (default AWS_ENDPOINT_URL)")
	services := flag.String("services", "sqs,dynamodb", "the services the endpoint serves, comma-separated")
	only := flag.String("only", "", "run only these checks, comma-separated")
	verbose := flag.Bool("v", false, "also print a line per passed check, with its wall time")
	flag.Parse()
	if *name == "" || *endpoint == "" {
		fmt.Fprintln(os.Stderr, "conformance: -emulator and -endpoint (or AWS_ENDPOINT_URL) are required")
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := emulator.Config(ctx, *endpoint, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	opts := &conformance.Options{}
	for _, s := range strings.Split(*services, ",") {
		if s = strings.TrimSpace(s); s != "" {
			opts.Services = append(opts.Services, conformance.Service(s))
		}
	}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	start := time.Now()
	report := conformance.Run(ctx, cfg, *name, opts)
	if *verbose {
		for _, r := range report.Results {
			fmt.Printf("%-24s %-46s %s %s\n", r.Outcome, r.Check, r.Duration.Round(time.Millisecond), strings.Join(r.Notes, "; "))
		}
		fmt.Printf("wall time %s\n", time.Since(start).Round(time.Millisecond))
	}
	for _, l := range report.Lines() {
		fmt.Println(l)
	}
	fmt.Println(report.Summary())
	if report.Failed() > 0 {
		os.Exit(1)
	}
}
