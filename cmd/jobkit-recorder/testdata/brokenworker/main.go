// Command brokenworker is a jobs worker that never reaches its handler: its configuration is
// broken (run without JOBKIT_QUEUE_URL), so it exits at init, as a function with a missing
// variable, a role it cannot use or a bad build does. Lambda reports an init error and hands the
// batch back; SQS's redrive policy moves its messages once they were received maxReceiveCount
// times.
package main

import (
	"fmt"
	"os"

	"github.com/jobkit-go/jobkit/jobs"
)

func main() {
	cfg, err := jobs.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokenworker:", err)
		os.Exit(1)
	}
	jobs.Start(jobs.NewWorkers(), cfg)
}
