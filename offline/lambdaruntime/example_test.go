package lambdaruntime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// A function's bootstrap runs as Lambda runs it: the answer comes back as a Result, and a timeout
// kills the process.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bootstrap := filepath.Join(dir, "bootstrap")
	if err := lambdaruntime.Build(ctx, "testdata/probe", bootstrap); err != nil {
		panic(err)
	}

	rt, err := lambdaruntime.New(lambdaruntime.Function{Name: "probe", Bootstrap: bootstrap, Timeout: time.Second}, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	res, err := rt.Invoke(ctx, []byte(`{"action":"raw","body":"{\"ok\":true}"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, string(res.Payload))

	res, err = rt.Invoke(ctx, []byte(`{"action":"sleep","ms":60000}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, res.Error.Type, rt.Instances())
	// Output:
	// success {"ok":true}
	// timeout Sandbox.Timedout 0
}
