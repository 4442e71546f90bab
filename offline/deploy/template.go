package deploy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// emulatorTemplate is the template the emulator's CloudFormation gets: the resources it serves,
// with references to the others replaced by their values. Everything else of the synthesized
// template passes through, except the CDK bootstrap version parameter and its rule (there is no
// bootstrap stack offline) and export names, which get the deployment's prefix.
func (dp *deployer) emulatorTemplate(run *stackRun) (string, error) {
	tpl := map[string]any{}
	for k, v := range run.art.Template {
		switch k {
		case "Resources", "Outputs", "Parameters", "Rules":
		default:
			tpl[k] = v
		}
	}
	if ps := emulatorParams(run.art.Template); ps != nil {
		tpl["Parameters"] = ps
	}
	resources := map[string]any{}
	for id, r := range run.resources {
		if run.place[id] != placeEmulator {
			continue
		}
		nr, err := dp.emulatorResource(run, id, r)
		if err != nil {
			return "", err
		}
		resources[id] = nr
	}
	if len(resources) == 0 {
		// CloudFormation needs a resource; this one does nothing, and keeps the stack (and its
		// exports) visible to tools.
		resources["JobkitOfflinePlaceholder"] = map[string]any{"Type": "AWS::CloudFormation::WaitConditionHandle"}
	}
	tpl["Resources"] = resources
	if outs, ok := run.art.Template["Outputs"].(map[string]any); ok {
		newOuts, err := dp.emulatorOutputs(run, outs)
		if err != nil {
			return "", err
		}
		tpl["Outputs"] = newOuts
	}
	b, err := json.Marshal(tpl)
	if err != nil {
		return "", fmt.Errorf("deploy: stack %s: %w", run.name, err)
	}
	return string(b), nil
}

// emulatorParams returns the template's parameters without BootstrapVersion (whose default is an
// SSM parameter of the CDK bootstrap stack, absent offline), or nil if none is left.
func emulatorParams(tpl map[string]any) map[string]any {
	ps, ok := tpl["Parameters"].(map[string]any)
	if !ok {
		return nil
	}
	keep := map[string]any{}
	for name, p := range ps {
		if name != "BootstrapVersion" {
			keep[name] = p
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return keep
}

// emulatorResource is resource id as the emulator gets it: DependsOn keeps only resources the
// emulator creates (CloudFormation rejects a dependency on a resource not in the template), and
// Properties are rewritten so they no longer refer to local or skipped resources.
func (dp *deployer) emulatorResource(run *stackRun, id string, r map[string]any) (map[string]any, error) {
	nr := map[string]any{}
	for k, v := range r {
		switch k {
		case "DependsOn":
			if keep := emulatorDeps(run, v); len(keep) > 0 {
				nr[k] = keep
			}
		case "Properties":
			pv, err := dp.rewrite(run, v, id+".Properties")
			if err != nil {
				return nil, err
			}
			nr[k] = pv
		default:
			nr[k] = v
		}
	}
	if typ, _ := r["Type"].(string); typ == typeQueue {
		nameQueue(run, id, nr)
	}
	return nr, nil
}

// emulatorDeps returns the entries of a DependsOn value (a name or a list) that the emulator creates.
func emulatorDeps(run *stackRun, v any) []any {
	var deps []any
	switch x := v.(type) {
	case string:
		deps = []any{x}
	case []any:
		deps = x
	}
	var keep []any
	for _, dep := range deps {
		if s, _ := dep.(string); run.place[s] == placeEmulator {
			keep = append(keep, s)
		}
	}
	return keep
}

// nameQueue gives an unnamed queue the name CloudFormation would give it, minus the random suffix.
// The emulator's generated names lack the ".fifo" a FIFO queue needs (and AWS requires), so every
// queue is named here.
func nameQueue(run *stackRun, id string, nr map[string]any) {
	props, _ := nr["Properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		nr["Properties"] = props
	}
	if _, named := props["QueueName"]; named {
		return
	}
	suffix := ""
	if fifo, _ := props["FifoQueue"].(bool); fifo || props["FifoQueue"] == "true" {
		suffix = ".fifo"
	}
	props["QueueName"] = truncName(run.name+"-"+id, 80-len(suffix)) + suffix
}

// emulatorOutputs returns the stack's outputs with their values rewritten, and export names
// prefixed so that deployments sharing an emulator do not collide (CloudFormation export names
// are unique per account and region).
func (dp *deployer) emulatorOutputs(run *stackRun, outs map[string]any) (map[string]any, error) {
	newOuts := map[string]any{}
	for name, o := range outs {
		om, _ := o.(map[string]any)
		no := map[string]any{}
		for k, v := range om {
			switch k {
			case "Value":
				rv, err := dp.rewrite(run, v, "Outputs."+name+".Value")
				if err != nil {
					return nil, err
				}
				no[k] = rv
			case "Export":
				ex, _ := v.(map[string]any)
				if n, ok := ex["Name"].(string); ok {
					no[k] = map[string]any{"Name": dp.o.Prefix + n}
				} else {
					no[k] = v
				}
			default:
				no[k] = v
			}
		}
		newOuts[name] = no
	}
	return newOuts, nil
}

// rewrite replaces, in a value bound for the emulator, references to resources it does not
// create by their values, and prefixes imported export names. References to the emulator's own
// resources, and every other intrinsic function, are left for its CloudFormation to resolve, so
// the template it gets stays as close to the synthesized one as possible.
func (dp *deployer) rewrite(run *stackRun, v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			if out, done, err := dp.rewriteIntrinsic(run, x, path); done || err != nil {
				return out, err
			}
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			rv, err := dp.rewrite(run, val, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			rv, err := dp.rewrite(run, val, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			out[i] = rv
		}
		return out, nil
	}
	return v, nil
}

// notCustom refuses a reference from a resource the emulator creates to a custom resource: its
// provider answers when the stack starts, after the emulator has created its resources. An output
// takes the reference's token, which devstack replaces in the Deployment's outputs then.
func (run *stackRun) notCustom(id, path string) error {
	if strings.HasPrefix(path, "Outputs.") {
		return nil
	}
	if typ, _ := run.resources[id]["Type"].(string); isCustom(typ) {
		return &ResolveError{Stack: run.name, Path: path, Reason: "a custom resource (" + id + ") cannot feed a resource the emulator creates offline: its provider runs when the stack starts"}
	}
	return nil
}

// isLocal reports whether id is a resource of the stack that the emulator does not create.
func (run *stackRun) isLocal(id string) bool {
	p, ok := run.place[id]
	return ok && p != placeEmulator
}

// rewriteIntrinsic rewrites a one-key map that is an intrinsic function rewrite must change: a
// Ref or Fn::GetAtt of a local resource, a Fn::ImportValue, a Fn::Sub naming a local resource.
// done is false when x is to be rewritten as a plain map.
func (dp *deployer) rewriteIntrinsic(run *stackRun, x map[string]any, path string) (out any, done bool, err error) {
	if ref, ok := x["Ref"].(string); ok && run.isLocal(ref) {
		if err := run.notCustom(ref, path); err != nil {
			return nil, true, err
		}
		return run.physical[ref], true, nil
	}
	if ga, ok := x["Fn::GetAtt"]; ok {
		var id, attr string
		switch a := ga.(type) {
		case []any:
			if len(a) == 2 {
				id, _ = a[0].(string)
				attr, _ = a[1].(string)
			}
		case string:
			id, attr, _ = strings.Cut(a, ".")
		}
		if run.isLocal(id) {
			if err := run.notCustom(id, path); err != nil {
				return nil, true, err
			}
			s, err := dp.synthAttr(run, id, attr)
			if err != nil {
				return nil, true, &ResolveError{Stack: run.name, Path: path, Reason: err.Error()}
			}
			return s, true, nil
		}
	}
	if iv, ok := x["Fn::ImportValue"].(string); ok {
		if v := dp.exports[dp.o.Prefix+iv]; strings.Contains(v, customTokenPrefix) && !strings.HasPrefix(path, "Outputs.") {
			return nil, true, &ResolveError{Stack: run.name, Path: path, Reason: "the export " + iv + " holds a custom resource's value, which cannot feed a resource the emulator creates offline: its provider runs when the stack starts"}
		}
		return map[string]any{"Fn::ImportValue": dp.o.Prefix + iv}, true, nil
	}
	if sub, ok := x["Fn::Sub"]; ok {
		out, err := dp.rewriteSub(run, sub, path)
		return out, true, err
	}
	return nil, false, nil
}

// rewriteSub substitutes, in a Fn::Sub template, the ${Resource} and ${Resource.Attribute} names of
// local resources, and rewrites its variables map. Names of the emulator's resources, parameters
// and pseudo parameters stay for its CloudFormation.
func (dp *deployer) rewriteSub(run *stackRun, sub any, path string) (any, error) {
	var tmpl string
	var vars any
	switch a := sub.(type) {
	case string:
		tmpl = a
	case []any:
		if len(a) == 2 {
			tmpl, _ = a[0].(string)
			vars = a[1]
		}
	}
	varMap, _ := vars.(map[string]any)
	for _, name := range subNames(tmpl) {
		if _, isVar := varMap[name]; isVar {
			continue
		}
		id, attr, hasAttr := strings.Cut(name, ".")
		if !run.isLocal(id) {
			continue
		}
		if err := run.notCustom(id, path); err != nil {
			return nil, err
		}
		val := run.physical[id]
		if hasAttr {
			s, err := dp.synthAttr(run, id, attr)
			if err != nil {
				return nil, &ResolveError{Stack: run.name, Path: path, Reason: err.Error()}
			}
			val = s
		}
		tmpl = strings.ReplaceAll(tmpl, "${"+name+"}", val)
	}
	if vars != nil {
		rv, err := dp.rewrite(run, vars, path+".Fn::Sub")
		if err != nil {
			return nil, err
		}
		return map[string]any{"Fn::Sub": []any{tmpl, rv}}, nil
	}
	return map[string]any{"Fn::Sub": tmpl}, nil
}
