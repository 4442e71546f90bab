package deploy

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// typeTaskDefinition is an ECS task definition: offline, each of its containers whose task
// definition names a Go source ("jobkit:source" metadata) runs as a local process.
const typeTaskDefinition = "AWS::ECS::TaskDefinition"

// Container is a container of an ECS task definition, resolved to run as a local process: the
// environment the task definition gives it, every reference resolved, and a binary built for this
// machine from the task definition's "jobkit:source" package.
type Container struct {
	Stack string `json:"stack"`
	// LogicalID is the task definition's logical id; Name the container's name in it.
	LogicalID string `json:"logical_id"`
	Name      string `json:"name"`
	// Source is the "jobkit:source" package the binary is built from.
	Source string `json:"source"`
	// ModuleDir is the directory of Source's Go module: the "jobkit:module" metadata resolved
	// against the template's directory, else Options.ModuleDir.
	ModuleDir string `json:"module_dir,omitempty"`
	// Binary is the executable built for this machine.
	Binary string `json:"binary"`
	// Env is the container's Environment, every reference resolved.
	Env map[string]string `json:"env"`
	// StopTimeout is the time between SIGTERM and SIGKILL (ECS's default 30 s when unset).
	StopTimeout time.Duration `json:"stop_timeout"`
}

// DefaultStopTimeout is ECS's stop timeout when a container definition sets none.
const DefaultStopTimeout = 30 * time.Second

// containers resolves the containers of an AWS::ECS::TaskDefinition whose metadata names a Go
// source. One without that metadata is listed in Skipped: its image cannot run here. Only the
// environment and the stop timeout are evaluated (the image and role references need not resolve).
func (dp *deployer) containers(run *stackRun, id string) error {
	meta, _ := run.resources[id]["Metadata"].(map[string]any)
	source, _ := meta[SourceMetadataKey].(string)
	if source == "" {
		dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id, Type: typeTaskDefinition,
			Reason: "no " + SourceMetadataKey + " metadata: its image cannot run offline"})
		return nil
	}
	// The source runs in the container the metadata names (the constructs write it); the others
	// are sidecars whose images cannot run here. Without that metadata, every container runs it.
	worker, _ := meta[contract.ContainerMetadataKey].(string)
	moduleDir := ""
	if mod, _ := meta[ModuleMetadataKey].(string); mod != "" {
		moduleDir = filepath.Join(filepath.Dir(run.art.TemplateFile), filepath.FromSlash(mod))
		if abs, err := filepath.Abs(moduleDir); err == nil {
			moduleDir = abs
		}
	}
	props, _ := run.resources[id]["Properties"].(map[string]any)
	defs, _ := props["ContainerDefinitions"].([]any)
	for i, d := range defs {
		def, _ := d.(map[string]any)
		bad := func(err error) error { return &ConfigError{Stack: run.name, LogicalID: id, Reason: err.Error()} }
		c := Container{Stack: run.name, LogicalID: id, Source: source, ModuleDir: moduleDir, Env: map[string]string{}, StopTimeout: DefaultStopTimeout}
		c.Name, _ = def["Name"].(string)
		if c.Name == "" {
			c.Name = fmt.Sprintf("container%d", i)
		}
		if worker != "" && c.Name != worker {
			dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id + "/" + c.Name, Type: typeTaskDefinition,
				Reason: "a sidecar: its image does not run offline (a CloudWatch agent's EMF listener is stood in for: devstack)"})
			continue
		}
		env, err := run.res.eval(def["Environment"], fmt.Sprintf("%s.ContainerDefinitions.%d.Environment", id, i))
		if err != nil {
			return err
		}
		list, _ := env.([]any)
		for _, e := range list {
			kv, _ := e.(map[string]any)
			name, _ := kv["Name"].(string)
			value, ok := scalarString(kv["Value"])
			if name == "" || !ok {
				return bad(fmt.Errorf("container %s: environment entry %v is not a name and a string", c.Name, kv))
			}
			c.Env[name] = value
		}
		secs, err := intProp(def, "StopTimeout", int(DefaultStopTimeout/time.Second))
		if err != nil {
			return bad(err)
		}
		c.StopTimeout = time.Duration(secs) * time.Second
		dp.d.Containers = append(dp.d.Containers, c)
	}
	return nil
}
