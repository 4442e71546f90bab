package devstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/jobkit-go/jobkit/offline/deploy"
)

// UpConfig configures Up.
type UpConfig struct {
	// Config is the running stack's configuration, as for Start; Up sets its Deployment.
	Config
	// Deploy is the deployment's options (cloud assembly, prefix, build directory, substituted
	// sources, ...).
	Deploy deploy.Options
	// DeployAWS, if set, is the configuration the deployment is made with; default Config.AWS.
	// (A stack whose functions reach the emulator through a proxy is deployed directly.)
	DeployAWS *aws.Config
	// Prepare, if set, runs after the deployment and before the stack starts. It may change the
	// deployment (a function's environment) and cfg (hooks that need the deployment).
	Prepare func(ctx context.Context, d *deploy.Deployment, cfg *Config) error
	// KeepOnError leaves the deployment on the emulator when Up fails after deploying (to look
	// at it); by default Up destroys what it deployed before returning its error.
	KeepOnError bool
}

// Running is a deployment of a cloud assembly and the stack running it.
type Running struct {
	// Deployment is what was deployed.
	Deployment *deploy.Deployment
	// Stack is the running functions, event source mappings and schedules.
	Stack *Stack
}

// Up deploys a cloud assembly onto the emulator (deploy.Deploy) and starts it (Start): the one
// path from a cdk.out to a running stack. Down stops and removes it. On error nothing is left
// running, and nothing deployed unless cfg.KeepOnError; a *deploy.StackExistsError, among
// others, comes back wrapped.
func Up(ctx context.Context, cfg UpConfig) (*Running, error) {
	deployAWS := cfg.AWS
	if cfg.DeployAWS != nil {
		deployAWS = *cfg.DeployAWS
	}
	d, err := deploy.Deploy(ctx, deploy.NewClients(deployAWS), &cfg.Deploy)
	fail := func(err error) (*Running, error) {
		if d != nil && !cfg.KeepOnError {
			err = errors.Join(err, d.Destroy(context.WithoutCancel(ctx)))
		}
		return nil, err
	}
	if err != nil {
		return fail(fmt.Errorf("devstack: deploy: %w", err))
	}
	cfg.Config.Deployment = d
	if cfg.Prepare != nil {
		if err := cfg.Prepare(ctx, d, &cfg.Config); err != nil {
			return fail(err)
		}
	}
	stack, err := Start(ctx, cfg.Config)
	if err != nil {
		return fail(err)
	}
	return &Running{Deployment: d, Stack: stack}, nil
}

// Down stops the stack (Stack.Stop) and destroys the deployment. It is safe to call after the
// stack was stopped.
func (r *Running) Down(ctx context.Context) error {
	var errs []error
	if r.Stack != nil {
		// As a stack's deletion does: the custom resources' Delete requests, while the
		// functions still run.
		errs = append(errs, r.Stack.DeleteCustomResources(ctx))
		errs = append(errs, r.Stack.Stop())
	}
	if r.Deployment != nil {
		errs = append(errs, r.Deployment.Destroy(ctx))
	}
	return errors.Join(errs...)
}
