package deploy

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// isStreamARN reports whether arn is a DynamoDB stream's: arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>.
func isStreamARN(arn string) bool {
	parts := strings.SplitN(arn, ":", 6)
	return len(parts) == 6 && parts[2] == "dynamodb" && strings.Contains(parts[5], "/stream/")
}

// streamMapping resolves a DynamoDB Streams AWS::Lambda::EventSourceMapping for esm.StreamPoller,
// with Lambda's defaults (batch size 100, retries until the records expire, parallelization
// factor 1, enabled). Its function and table are linked by linkStreamMappings.
func (dp *deployer) streamMapping(run *stackRun, id string, props map[string]any) error {
	bad := func(format string, args ...any) error {
		return &ConfigError{Stack: run.name, LogicalID: id, Reason: fmt.Sprintf(format, args...)}
	}
	m := StreamEventSourceMapping{Stack: run.name, LogicalID: id, UUID: run.physical[id], Enabled: true}
	m.StreamARN, _ = props["EventSourceArn"].(string)
	if m.Function, _ = props["FunctionName"].(string); m.Function == "" {
		return bad("FunctionName is required")
	}
	if m.StartingPosition, _ = props["StartingPosition"].(string); m.StartingPosition != "TRIM_HORIZON" && m.StartingPosition != "LATEST" {
		return bad("StartingPosition %q: a stream's mapping needs TRIM_HORIZON or LATEST", m.StartingPosition)
	}
	var err error
	ints := []struct {
		key  string
		def  int
		into *int
	}{
		{"BatchSize", 100, &m.BatchSize},
		{"MaximumRetryAttempts", -1, &m.MaximumRetryAttempts},
		{"ParallelizationFactor", 1, &m.ParallelizationFactor},
	}
	for _, p := range ints {
		if *p.into, err = intProp(props, p.key, p.def); err != nil {
			return bad("%v", err)
		}
	}
	window, err := intProp(props, "MaximumBatchingWindowInSeconds", 0)
	if err != nil {
		return bad("%v", err)
	}
	m.MaximumBatchingWindow = time.Duration(window) * time.Second
	age, err := intProp(props, "MaximumRecordAgeInSeconds", -1)
	if err != nil {
		return bad("%v", err)
	}
	if age > 0 {
		m.MaximumRecordAge = time.Duration(age) * time.Second
	}
	m.BisectBatchOnError = boolProp(props, "BisectBatchOnError", false)
	m.ReportBatchItemFailures = reportsItemFailures(props)
	m.Enabled = boolProp(props, "Enabled", true)
	if m.Filters, err = filterPatterns(props); err != nil {
		return bad("%v", err)
	}
	if dc, ok := props["DestinationConfig"].(map[string]any); ok {
		of, _ := dc["OnFailure"].(map[string]any)
		m.OnFailureARN, _ = of["Destination"].(string)
	}
	dp.d.StreamMappings = append(dp.d.StreamMappings, m)
	return nil
}

// filterPatterns returns FilterCriteria.Filters[].Pattern; each must be a JSON string.
func filterPatterns(props map[string]any) ([]string, error) {
	fc, _ := props["FilterCriteria"].(map[string]any)
	filters, _ := fc["Filters"].([]any)
	var out []string
	for i, f := range filters {
		fm, _ := f.(map[string]any)
		p, ok := fm["Pattern"].(string)
		if !ok || !json.Valid([]byte(p)) {
			return nil, fmt.Errorf("FilterCriteria.Filters[%d].Pattern is not a JSON string", i)
		}
		out = append(out, p)
	}
	return out, nil
}

// linkStreamMappings resolves each stream mapping's function, its table (the one whose stream it
// is, by ARN) and its on-failure queue's URL when that queue is in the deployment.
func (dp *deployer) linkStreamMappings() error {
	for i := range dp.d.StreamMappings {
		m := &dp.d.StreamMappings[i]
		if _, err := dp.mappedFunction(&m.Function, m.Stack, m.LogicalID); err != nil {
			return err
		}
		for _, t := range dp.d.Tables {
			if strings.HasPrefix(m.StreamARN, t.ARN+"/stream/") {
				m.Table = t.Name
			}
		}
		if m.Table == "" {
			return &ConfigError{Stack: m.Stack, LogicalID: m.LogicalID, Reason: "stream " + m.StreamARN + " is not a stream of a table in the deployment"}
		}
		if q := dp.d.QueueByARN(m.OnFailureARN); q != nil {
			m.OnFailureURL = q.URL
		}
	}
	return nil
}
