package deploy_test

import (
	"context"
	"fmt"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Deploy the synthesized app (cdk.out) on the emulator and list what its functions will see.
func ExampleDeploy() {
	ctx := context.Background()
	cfg, err := awstest.LoadConfig(ctx) // AWS_ENDPOINT_URL, or the emulator's default address
	if err != nil {
		panic(err)
	}
	d, err := deploy.Deploy(ctx, deploy.NewClients(cfg), &deploy.Options{CDKOut: "cdk.out"})
	if err != nil {
		panic(err)
	}
	for _, fn := range d.Functions {
		fmt.Println(fn.Name, fn.Bootstrap, fn.Env["JOBKIT_QUEUE_URL"])
	}
	for _, s := range d.Skipped {
		fmt.Println("skipped", s.Type, s.LogicalID, "-", s.Reason)
	}
}
