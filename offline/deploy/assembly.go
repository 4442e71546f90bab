package deploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// StackArtifact is one CloudFormation stack of a cloud assembly (cdk.out).
type StackArtifact struct {
	// ID is the artifact id; Name the stack name (properties.stackName, else the id).
	ID, Name string
	// TemplateFile is the template's path.
	TemplateFile string
	// DependsOn are the ids of the stacks this one needs deployed first.
	DependsOn []string
	// Template is the parsed template.
	Template map[string]any
}

// manifest is the part of a cloud assembly's manifest.json that Deploy reads: each artifact's
// type, its dependencies and, for a stack, its template file and stack name.
type manifest struct {
	Artifacts map[string]struct {
		Type         string   `json:"type"`
		Dependencies []string `json:"dependencies"`
		Properties   struct {
			TemplateFile string `json:"templateFile"`
			StackName    string `json:"stackName"`
		} `json:"properties"`
	} `json:"artifacts"`
}

// ReadAssembly reads the stacks of the cloud assembly in dir (cdk.out), ordered so that every
// stack comes after the stacks it depends on.
func ReadAssembly(dir string) ([]StackArtifact, error) {
	stacks, err := readStacks(dir)
	if err != nil {
		return nil, err
	}
	return orderStacks(stacks)
}

// readStacks reads manifest.json and the template of each CloudFormation stack artifact, keyed by
// artifact id. Other artifacts (assets, the tree, nested assemblies) are not deployed; dependencies
// on them are dropped.
func readStacks(dir string) (map[string]*StackArtifact, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("deploy: read cloud assembly: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("deploy: %s/manifest.json: %w", dir, err)
	}
	stacks := map[string]*StackArtifact{}
	for id, a := range m.Artifacts {
		if a.Type != "aws:cloudformation:stack" {
			continue
		}
		s := &StackArtifact{ID: id, Name: a.Properties.StackName, TemplateFile: filepath.Join(dir, a.Properties.TemplateFile)}
		s.Name = cmp.Or(s.Name, id)
		body, err := os.ReadFile(s.TemplateFile)
		if err != nil {
			return nil, fmt.Errorf("deploy: stack %s: %w", id, err)
		}
		if err := json.Unmarshal(body, &s.Template); err != nil {
			return nil, fmt.Errorf("deploy: stack %s: template %s: %w", id, s.TemplateFile, err)
		}
		for _, d := range a.Dependencies {
			if dep, ok := m.Artifacts[d]; ok && dep.Type == "aws:cloudformation:stack" {
				s.DependsOn = append(s.DependsOn, d)
			}
		}
		sort.Strings(s.DependsOn)
		stacks[id] = s
	}
	if len(stacks) == 0 {
		return nil, fmt.Errorf("deploy: %s holds no CloudFormation stack", dir)
	}
	return stacks, nil
}

// orderStacks sorts the stacks topologically (depth first, ids in lexical order for a stable
// result), as the CDK CLI deploys them, and refuses a dependency cycle.
func orderStacks(stacks map[string]*StackArtifact) ([]StackArtifact, error) {
	ids := make([]string, 0, len(stacks))
	for id := range stacks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var order []StackArtifact
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("deploy: stacks depend on each other in a cycle through %s", id)
		case 2:
			return nil
		}
		state[id] = 1
		for _, d := range stacks[id].DependsOn {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[id] = 2
		order = append(order, *stacks[id])
		return nil
	}
	for _, id := range ids {
		if err := visit(id); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// selectStacks keeps the named stacks and, transitively, the stacks they depend on (as
// `cdk deploy <stack>` does), in the assembly's order. No names means all.
func selectStacks(all []StackArtifact, names []string) ([]StackArtifact, error) {
	if len(names) == 0 {
		return all, nil
	}
	byName := map[string]StackArtifact{}
	byID := map[string]StackArtifact{}
	for _, s := range all {
		byName[s.Name], byID[s.ID] = s, s
	}
	want := map[string]bool{}
	var add func(id string)
	add = func(id string) {
		if want[id] {
			return
		}
		want[id] = true
		for _, dep := range byID[id].DependsOn {
			add(dep)
		}
	}
	for _, n := range names {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("deploy: no stack named %q in the assembly", n)
		}
		add(s.ID)
	}
	var out []StackArtifact
	for _, s := range all {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	return out, nil
}
