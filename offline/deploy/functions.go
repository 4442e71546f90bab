package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// evalProps evaluates a local resource's properties: every intrinsic function resolved, since
// lambdaruntime, esm and the Scheduler API take plain values. An empty map if it has none.
func (dp *deployer) evalProps(run *stackRun, id string) (map[string]any, error) {
	props, _ := run.resources[id]["Properties"].(map[string]any)
	v, err := run.res.eval(props, id+".Properties")
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// intProp reads a number property, def when absent. CloudFormation accepts numbers as JSON
// numbers or strings ("30"), and a resolved Ref to a parameter is often a string.
func intProp(props map[string]any, key string, def int) (int, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	s, ok := scalarString(v)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", key)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return int(f), nil
}

// boolProp reads a boolean property (true, or the string "true" a resolved parameter gives), def
// when absent.
func boolProp(props map[string]any, key string, def bool) bool {
	v, ok := props[key]
	if !ok {
		return def
	}
	return v == true || v == "true"
}

// reportsItemFailures reports whether an event source mapping's FunctionResponseTypes lists
// ReportBatchItemFailures.
func reportsItemFailures(props map[string]any) bool {
	types, _ := props["FunctionResponseTypes"].([]any)
	return slices.Contains(types, any("ReportBatchItemFailures"))
}

// function resolves an AWS::Lambda::Function for lambdaruntime: its name and ARN, handler,
// timeout (Lambda's default 3 s), memory (default 128 MB), reserved concurrency and environment,
// every reference resolved. The code itself is not read from the template: the "jobkit:source"
// metadata names the Go package to build (see build), and the asset path is the fallback.
func (dp *deployer) function(run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	fn := Function{Stack: run.name, LogicalID: id, Name: run.physical[id], Env: map[string]string{}}
	fn.ARN, _ = dp.synthAttr(run, id, "Arn")
	fn.Handler, _ = props["Handler"].(string)
	fn.Runtime, _ = props["Runtime"].(string)
	if archs, ok := props["Architectures"].([]any); ok {
		for _, a := range archs {
			if s, ok := a.(string); ok {
				fn.Architectures = append(fn.Architectures, s)
			}
		}
	}
	// Errors name the resource: ConfigError carries the stack and logical id.
	bad := func(err error) error { return &ConfigError{Stack: run.name, LogicalID: id, Reason: err.Error()} }
	timeout, err := intProp(props, "Timeout", 3)
	if err != nil {
		return bad(err)
	}
	fn.Timeout = time.Duration(timeout) * time.Second
	if fn.MemoryMB, err = intProp(props, "MemorySize", 128); err != nil {
		return bad(err)
	}
	if fn.ReservedConcurrency, err = intProp(props, "ReservedConcurrentExecutions", 0); err != nil {
		return bad(err)
	}
	if env, ok := props["Environment"].(map[string]any); ok {
		vars, _ := env["Variables"].(map[string]any)
		for k, v := range vars {
			s, ok := scalarString(v)
			if !ok {
				return bad(fmt.Errorf("environment variable %s is not a string", k))
			}
			fn.Env[k] = s
		}
	}
	if lc, ok := props["LoggingConfig"].(map[string]any); ok {
		// Lambda tells the runtime the log format and levels through these variables.
		if f, _ := lc["LogFormat"].(string); f != "" {
			fn.Env["AWS_LAMBDA_LOG_FORMAT"] = f
		}
		if l, _ := lc["ApplicationLogLevel"].(string); l != "" {
			fn.Env["AWS_LAMBDA_LOG_LEVEL"] = l
		}
	}
	// The code: "jobkit:source" (written by infra/constructs) names the Go package to build;
	// "aws:asset:path" is the directory CDK bundled, used when there is no source.
	meta, _ := run.resources[id]["Metadata"].(map[string]any)
	fn.Source, _ = meta[SourceMetadataKey].(string)
	if mod, _ := meta[ModuleMetadataKey].(string); mod != "" && fn.Source != "" {
		fn.ModuleDir = filepath.Join(filepath.Dir(run.art.TemplateFile), filepath.FromSlash(mod))
		if abs, err := filepath.Abs(fn.ModuleDir); err == nil {
			fn.ModuleDir = abs
		}
	}
	fn.AssetPath, _ = meta["aws:asset:path"].(string)
	if fn.AssetPath == "" {
		// The CDK CLI asks for that metadata; an app synthesized without it (app.Synth in a
		// program of its own, a CLI told not to) still has the asset in its asset manifest.
		fn.AssetPath = stagedAsset(run.art.TemplateFile, run.resources[id])
	}
	dp.d.Functions = append(dp.d.Functions, fn)
	return nil
}

// mapping resolves an AWS::Lambda::EventSourceMapping for esm, with Lambda's defaults for SQS
// (batch size 10, no batching window, enabled). SQS sources and DynamoDB streams (streamMapping)
// run offline; a mapping of another source (Kinesis, Kafka) is listed in Skipped. Its function and
// queue are linked later, by linkMappings, once every stack is deployed.
func (dp *deployer) mapping(run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: fmt.Sprintf(format, args...)}
	}
	m := EventSourceMapping{Stack: run.name, LogicalID: id, UUID: run.physical[id], Enabled: true}
	m.QueueARN, _ = props["EventSourceArn"].(string)
	if isStreamARN(m.QueueARN) {
		return dp.streamMapping(run, id, props)
	}
	if parts := strings.Split(m.QueueARN, ":"); len(parts) != 6 || parts[2] != "sqs" {
		dp.d.Skipped = append(dp.d.Skipped, Skipped{Stack: run.name, LogicalID: id, Type: typeESM, Reason: "only SQS and DynamoDB Streams event sources run offline (source " + m.QueueARN + ")"})
		return nil
	}
	m.Function, _ = props["FunctionName"].(string)
	if m.Function == "" {
		return bad("FunctionName is required")
	}
	if m.BatchSize, err = intProp(props, "BatchSize", 10); err != nil {
		return bad("%v", err)
	}
	window, err := intProp(props, "MaximumBatchingWindowInSeconds", 0)
	if err != nil {
		return bad("%v", err)
	}
	m.MaximumBatchingWindow = time.Duration(window) * time.Second
	if sc, ok := props["ScalingConfig"].(map[string]any); ok {
		if m.MaximumConcurrency, err = intProp(sc, "MaximumConcurrency", 0); err != nil {
			return bad("%v", err)
		}
	}
	m.ReportBatchItemFailures = reportsItemFailures(props)
	m.Enabled = boolProp(props, "Enabled", true)
	dp.d.Mappings = append(dp.d.Mappings, m)
	return nil
}

// mappedFunction returns the function a mapping (stack's logicalID) names in *function, and
// sets *function to the function's deployed name; a function not in the deployment is the
// mapping's ConfigError.
func (dp *deployer) mappedFunction(function *string, stack, logicalID string) (*Function, error) {
	fn := dp.d.FunctionByName(*function)
	if fn == nil {
		return nil, &ConfigError{Stack: stack, LogicalID: logicalID, Reason: "function " + *function + " is not in the deployment"}
	}
	*function = fn.Name
	return fn, nil
}

// linkMappings resolves each mapping's function and queue, and checks what Lambda checks when it
// creates a mapping: the queue's visibility timeout is at least the function's timeout. A queue
// that is not in this deployment (another deployment's, on the same emulator) is looked up by the
// name and account its ARN carries.
func (dp *deployer) linkMappings(ctx context.Context) error {
	if err := dp.linkStreamMappings(); err != nil {
		return err
	}
	for i := range dp.d.Mappings {
		m := &dp.d.Mappings[i]
		fn, err := dp.mappedFunction(&m.Function, m.Stack, m.LogicalID)
		if err != nil {
			return err
		}
		if q := dp.d.QueueByARN(m.QueueARN); q != nil {
			m.QueueURL = q.URL
			if q.VisibilityTimeout < fn.Timeout {
				return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: fmt.Sprintf(
					"queue visibility timeout %s is less than function %s timeout %s", q.VisibilityTimeout, fn.Name, fn.Timeout)}
			}
			continue
		}
		// A queue of another deployment on the same emulator.
		parts := strings.Split(m.QueueARN, ":")
		out, err := dp.c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
		if err != nil {
			return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: "queue " + m.QueueARN + ": " + err.Error()}
		}
		m.QueueURL = aws.ToString(out.QueueUrl)
	}
	return nil
}

// stagedAsset returns the directory, relative to the cloud assembly, that the assembly's asset
// manifests (<stack>.assets.json beside the template) give as the source of the file asset the
// function's Code.S3Key names ("<hash>.zip", as the CDK's synthesizers write it); "" when there is
// none.
func stagedAsset(templateFile string, resource map[string]any) string {
	props, _ := resource["Properties"].(map[string]any)
	code, _ := props["Code"].(map[string]any)
	key, _ := code["S3Key"].(string)
	hash, ok := strings.CutSuffix(key, ".zip")
	if !ok || hash == "" {
		return ""
	}
	manifests, _ := filepath.Glob(filepath.Join(filepath.Dir(templateFile), "*.assets.json"))
	for _, m := range manifests {
		raw, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var assets struct {
			Files map[string]struct {
				Source struct{ Path, Packaging string }
			}
		}
		if json.Unmarshal(raw, &assets) != nil {
			continue
		}
		if f, ok := assets.Files[hash]; ok && f.Source.Packaging == "zip" && f.Source.Path != "" {
			return f.Source.Path
		}
	}
	return ""
}

// customResource records a custom resource for devstack to create: CloudFormation's request for
// it, every property resolved (its ServiceToken names the provider).
func (dp *deployer) customResource(run *stackRun, id string) error {
	props, err := dp.evalProps(run, id)
	if err != nil {
		return err
	}
	token, _ := props["ServiceToken"].(string)
	if token == "" {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: "a custom resource needs a ServiceToken"}
	}
	typ, _ := run.resources[id]["Type"].(string)
	dp.d.CustomResources = append(dp.d.CustomResources, CustomResource{
		Stack: run.name, StackID: run.res.stackID, LogicalID: id, Type: typ, ServiceToken: token, Properties: props,
	})
	return nil
}
