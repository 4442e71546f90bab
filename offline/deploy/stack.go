package deploy

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// deployer carries one Deploy call: its clients and options, the Deployment it fills in, and the
// exports of every stack on the emulator (read back after each stack, as CloudFormation's
// Fn::ImportValue would see them).
type deployer struct {
	c       Clients
	o       Options
	log     *slog.Logger
	d       *Deployment
	exports map[string]string
	// groups maps the name a template gives a schedule group to the prefixed name it was
	// created under, across the stacks deployed so far (prefixedGroup).
	groups map[string]string
}

// stackRun is the state of one stack while it deploys.
type stackRun struct {
	name      string // with the prefix
	art       StackArtifact
	ids       []string                  // the logical ids of active resources, sorted: a stable order
	resources map[string]map[string]any // active resources (their Condition, if any, holds)
	place     map[string]int
	physical  map[string]string            // Ref values
	attrs     map[string]map[string]string // Fn::GetAtt values known
	res       *resolver
}

// stack deploys one stack of the assembly in the order CloudFormation would honour for it: first
// the resources the emulator's CloudFormation creates (so their physical ids, ARNs and the stack's
// exports exist), then, with those resolved, what this package creates or runs itself. Schedule
// groups and functions go before schedules and event source mappings, which name them.
func (dp *deployer) stack(ctx context.Context, art StackArtifact) error {
	run, err := dp.newStackRun(ctx, art)
	if err != nil {
		return err
	}
	if err := run.classify(dp); err != nil {
		return err
	}
	if err := dp.emulatorPart(ctx, run); err != nil {
		return err
	}
	if err := dp.localPart(ctx, run, typeScheduleGroup, typeFunction, typeTaskDefinition); err != nil {
		return err
	}
	if err := dp.localPart(ctx, run, typeSchedule, typeESM, typeCustomResource); err != nil {
		return err
	}
	dp.log.Info("stack deployed", "stack", run.name, "emulator_resources", countPlace(run, placeEmulator),
		"local_resources", countPlace(run, placeLocal), "skipped", countPlace(run, placeSkipped))
	return nil
}

// newStackRun prepares the state of one stack and its resolver. The resolver's Ref, Fn::GetAtt and
// Fn::ImportValue look at what has been deployed so far, so they close over run and dp.
func (dp *deployer) newStackRun(ctx context.Context, art StackArtifact) (*stackRun, error) {
	name := dp.o.Prefix + art.Name
	run := &stackRun{
		name: name, art: art, resources: map[string]map[string]any{}, place: map[string]int{},
		physical: map[string]string{}, attrs: map[string]map[string]string{},
	}
	params, err := dp.params(art)
	if err != nil {
		return nil, err
	}
	condDefs, _ := art.Template["Conditions"].(map[string]any)
	mappings, _ := art.Template["Mappings"].(map[string]any)
	run.res = &resolver{
		stack: name, region: dp.o.Region, account: dp.d.AccountID,
		// A provisional AWS::StackId until CreateStack returns the emulator's.
		stackID:  "arn:" + awsarn.Partition(dp.o.Region) + ":cloudformation:" + dp.o.Region + ":" + dp.d.AccountID + ":stack/" + name + "/local",
		params:   params,
		mappings: mappings,
		condDefs: condDefs,
		ref: func(id string) (string, bool) {
			v, ok := run.physical[id]
			return v, ok
		},
		getAtt: func(id, attr string) (string, error) { return dp.getAtt(ctx, run, id, attr) },
		importValue: func(n string) (string, bool) {
			// Export names are prefixed like stack names, so deployments sharing an emulator
			// import their own.
			v, ok := dp.exports[dp.o.Prefix+n]
			return v, ok
		},
	}
	return run, nil
}

// classify evaluates each resource's Condition (a resource whose condition is false does not
// exist, as in CloudFormation), gives each active resource its place, names the ones the emulator
// will not create (their Ref value is known before anything is created), and records the skipped.
func (run *stackRun) classify(dp *deployer) error {
	resources, _ := run.art.Template["Resources"].(map[string]any)
	ids := make([]string, 0, len(resources))
	for id := range resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r, ok := resources[id].(map[string]any)
		if !ok {
			return &ConfigError{Stack: run.name, LogicalID: id, Reason: "resource is not an object"}
		}
		if c, ok := r["Condition"].(string); ok {
			on, err := run.res.condition(c)
			if err != nil {
				return err
			}
			if !on {
				continue
			}
		}
		typ, _ := r["Type"].(string)
		run.ids = append(run.ids, id)
		run.resources[id] = r
		run.place[id] = placeOf(typ)
		if run.place[id] != placeEmulator {
			run.physical[id] = dp.synthName(run, id)
			if isCustom(typ) {
				run.physical[id] = CustomToken(run.name, id, "") // its provider's answer
			}
		}
		if run.place[id] == placeSkipped {
			dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id, Type: typ, Reason: skipReason(typ)})
			dp.log.Debug("resource skipped", "stack", run.name, "logical_id", id, "type", typ, "reason", skipReason(typ))
		}
	}
	return nil
}

// emulatorPart creates the emulator's share of the stack through its CloudFormation, then reads
// back what it made and the exports, which the local part and later stacks resolve against.
func (dp *deployer) emulatorPart(ctx context.Context, run *stackRun) error {
	body, err := dp.emulatorTemplate(run)
	if err != nil {
		return err
	}
	stackID, err := dp.createStack(ctx, run.name, body)
	if err != nil {
		return err
	}
	run.res.stackID = stackID
	if err := dp.readStack(ctx, run); err != nil {
		return err
	}
	return dp.refreshExports(ctx)
}

// localPart creates or resolves, in logical id order, the stack's local resources of the given
// types.
func (dp *deployer) localPart(ctx context.Context, run *stackRun, types ...string) error {
	for _, id := range run.ids {
		typ, _ := run.resources[id]["Type"].(string)
		if isCustom(typ) {
			typ = typeCustomResource // Custom::<Name> too
		}
		if run.place[id] != placeLocal || !slices.Contains(types, typ) {
			continue
		}
		var err error
		switch typ {
		case typeScheduleGroup:
			err = dp.scheduleGroup(ctx, run, id)
		case typeFunction:
			err = dp.function(run, id)
		case typeTaskDefinition:
			err = dp.containers(run, id)
		case typeSchedule:
			err = dp.schedule(ctx, run, id)
		case typeESM:
			err = dp.mapping(run, id)
		case typeCustomResource:
			err = dp.customResource(run, id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// params returns the template's parameter values: their defaults, since an offline deployment
// takes no parameter values. The CDK bootstrap version parameter (and the rule that checks it) do
// not apply offline: there is no bootstrap stack. List types are split as CloudFormation splits
// them, so Fn::Select and Fn::Join see lists.
func (dp *deployer) params(art StackArtifact) (map[string]any, error) {
	out := map[string]any{}
	ps, _ := art.Template["Parameters"].(map[string]any)
	for name, p := range ps {
		if name == "BootstrapVersion" {
			continue
		}
		pm, _ := p.(map[string]any)
		def, ok := pm["Default"]
		if !ok {
			return nil, &ConfigError{Stack: dp.o.Prefix + art.Name, LogicalID: name, Reason: "parameter has no default; offline deployments take none"}
		}
		if typ, _ := pm["Type"].(string); strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
			s, _ := scalarString(def)
			var list []any
			for _, item := range strings.Split(s, ",") {
				list = append(list, strings.TrimSpace(item))
			}
			out[name] = list
			continue
		}
		out[name] = def
	}
	return out, nil
}
