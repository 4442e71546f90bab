package devstack

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/taskrun"
)

// ContainerName is how the stack names a deployment's container: the worker name its environment
// gives (JOBKIT_WORKER_NAME, set by the ContainerWorker construct), else "<task definition>/<container>".
func ContainerName(c deploy.Container) string {
	if n := c.Env[contract.EnvWorkerName]; n != "" {
		return n
	}
	return c.LogicalID + "/" + c.Name
}

// startContainers starts a taskrun.Task (one process, restarted when it exits) for each container
// of the deployment, with the environment its task definition gives it.
func (s *Stack) startContainers(cfg *Config, creds aws.Credentials, outMu *sync.Mutex) error {
	d := cfg.Deployment
	for _, c := range d.Containers {
		if c.Binary == "" {
			return fmt.Errorf("devstack: container %s has no binary (deployed with SkipBuild?)", ContainerName(c))
		}
		name := ContainerName(c)
		var onStart func(int)
		if cfg.OnTaskStart != nil {
			onStart = func(pid int) { cfg.OnTaskStart(name, pid) }
		}
		env := c.Env
		if c.Env[contract.EnvMetricsEndpoint] != "" {
			// The CloudWatch agent sidecar's image does not run here: a listener of the stack's
			// takes the EMF lines instead.
			a, err := startEMFAgent(name, cfg.Output, outMu)
			if err != nil {
				return fmt.Errorf("devstack: container %s: the CloudWatch agent's stand-in: %w", name, err)
			}
			s.agents[name] = a
			env = maps.Clone(c.Env)
			env[contract.EnvMetricsEndpoint] = a.endpoint()
		}
		t, err := taskrun.Start(taskrun.Options{
			Name: name, Binary: c.Binary, Env: env, StopTimeout: c.StopTimeout,
			RestartDelay: cfg.TaskRestartDelay, MaxRestartDelay: cfg.TaskMaxRestartDelay,
			Region: d.Region, Endpoint: cfg.Endpoint,
			AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken,
			Output: cfg.Output, OutputMu: outMu, Logger: cfg.Logger, OnStart: onStart,
		})
		if err != nil {
			return fmt.Errorf("devstack: %w", err)
		}
		s.tasks[name] = t
		s.log.Info("container started", "container", name, "source", c.Source, "stop_timeout", c.StopTimeout.String())
	}
	return nil
}

// stopContainers stops every task as ECS stops one (SIGTERM, SIGKILL after its stop timeout), all
// at once, and returns once their processes are gone.
func (s *Stack) stopContainers() {
	var wg sync.WaitGroup
	for name, t := range s.tasks {
		wg.Go(func() {
			if !t.Stop() {
				s.log.Warn("container killed after its stop timeout", "container", name)
			}
		})
	}
	wg.Wait()
	for _, a := range s.agents {
		a.stop()
	}
}

// EMFLines returns how many EMF lines the container named name (see ContainerName) sent to its
// CloudWatch agent's stand-in: 0 for a container without one.
func (s *Stack) EMFLines(name string) int64 {
	if a := s.agents[name]; a != nil {
		return a.lines.Load()
	}
	return 0
}

// Containers returns the names of the containers running (as local processes), sorted.
func (s *Stack) Containers() []string {
	return slices.Sorted(maps.Keys(s.tasks))
}

// Task returns the running container named name (see ContainerName), or nil.
func (s *Stack) Task(name string) *taskrun.Task { return s.tasks[name] }
