package devrun_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/jobkit-go/jobkit/offline/devrun"
)

// Run a service's cloud assembly on the emulator until Ctrl-C, print the stack outputs for a
// producer, then the count of every job the stack ran.
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithBaseEndpoint("http://127.0.0.1:4566"), config.WithRegion("us-east-1"))
	if err != nil {
		panic(err)
	}
	res, err := devrun.Run(ctx, devrun.Config{
		AWS:    cfg,
		CDKOut: "cdk.out",
		Ready: func(exports []devrun.Export) {
			for _, e := range exports {
				fmt.Println(e) // export JobkitQueueWelcome='http://...'
			}
		},
		Progress: func(c *devrun.Census) { fmt.Fprintln(os.Stderr, c.Line()) },
	})
	if res != nil && res.Census != nil {
		fmt.Print(res.Census.Table())
		fmt.Println(res.Census.Summary()) // DEV summary: succeeded=50 retried=10 dead=0 lost=0 cancelled=0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}
