package taskrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
	"github.com/jobkit-go/jobkit/offline/taskrun"
)

// A container of a task definition runs as a local process with its environment; Stop ends it as
// ECS stops a task: SIGTERM, then SIGKILL if it outlives its stop timeout.
func Example() {
	dir, err := os.MkdirTemp("", "example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "hello")
	if err := lambdaruntime.Build(context.Background(), "testdata/hello", bin); err != nil {
		panic(err)
	}
	var out output
	task, err := taskrun.Start(taskrun.Options{
		Name: "Hello", Binary: bin, Env: map[string]string{"GREETING": "hello from the task"},
		StopTimeout: 10 * time.Second, Output: &out,
	})
	if err != nil {
		panic(err)
	}
	for !strings.Contains(out.String(), "hello") { // wait until it runs
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("exited before SIGKILL:", task.Stop())
	fmt.Print(out.String())
	// Output:
	// exited before SIGKILL: true
	// [Hello] hello from the task
	// [Hello] SIGTERM: draining, then exiting
}
