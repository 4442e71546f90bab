package devstack

import (
	"fmt"
	"sort"
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
		t, err := taskrun.Start(taskrun.Options{
			Name: name, Binary: c.Binary, Env: c.Env, StopTimeout: c.StopTimeout,
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !t.Stop() {
				s.log.Warn("container killed after its stop timeout", "container", name)
			}
		}()
	}
	wg.Wait()
}

// Containers returns the names of the containers running (as local processes), sorted.
func (s *Stack) Containers() []string {
	var names []string
	for n := range s.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Task returns the running container named name (see ContainerName), or nil.
func (s *Stack) Task(name string) *taskrun.Task { return s.tasks[name] }
