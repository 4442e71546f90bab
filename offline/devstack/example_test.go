package devstack_test

import (
	"context"
	"os"
	"os/signal"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Deploy the synthesized app and run it until Ctrl-C: every function fed by its queues, the
// schedules firing, then nothing left running.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		panic(err)
	}
	d, err := deploy.Deploy(ctx, deploy.NewClients(cfg), &deploy.Options{CDKOut: "cdk.out"})
	if err != nil {
		panic(err)
	}
	stack, err := devstack.Start(ctx, devstack.Config{AWS: cfg, Deployment: d})
	if err != nil {
		panic(err)
	}
	<-ctx.Done()
	if err := stack.Stop(); err != nil {
		panic(err)
	}
}
