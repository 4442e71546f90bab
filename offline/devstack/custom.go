package devstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/jobkit-go/jobkit/offline/deploy"
	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// Custom resources. CloudFormation creates a custom resource by invoking its provider function
// with a request (RequestType Create, the resource's properties) and a ResponseURL, a presigned S3
// URL to which the provider PUTs its answer: SUCCESS with a physical id and data, or FAILED with
// a reason, which fails the deployment. Offline the request is the same and the answer goes to a
// server on this machine. CDK's providers PUT with https.request and the URL's host and path
// only (its port dropped, as an S3 URL has none), so the Node.js runtime loop sends a request for
// 127.0.0.1 without a port to this server's port (JOBKIT_CFN_RESPONSE_PORT); Python's urllib
// handlers use the URL as it is.

// envResponsePort names the port of the answers' server in a provider's environment.
const envResponsePort = "JOBKIT_CFN_RESPONSE_PORT"

// CustomResource is a custom resource the stack created, with its provider's answer.
type CustomResource struct {
	deploy.CustomResource
	PhysicalResourceID string         `json:"physical_resource_id"`
	Data               map[string]any `json:"data,omitempty"`
	provider           string         // its provider function's name
}

// CustomResourceError is a custom resource whose provider failed a request (or never answered):
// on AWS a failed Create fails the deployment and rolls it back, a failed Delete the stack's
// deletion.
type CustomResourceError struct {
	LogicalID, Type, Reason string
	// Request is the request that failed: Create (also when empty) or Delete.
	Request string
}

func (e *CustomResourceError) Error() string {
	what := "failed"
	if e.Request == "Delete" {
		what = "failed its Delete"
	}
	return fmt.Sprintf("devstack: custom resource %s (%s) %s: %s", e.LogicalID, e.Type, what, e.Reason)
}

// answer is a provider's response document.
type answer struct {
	Status             string
	Reason             string
	PhysicalResourceID string `json:"PhysicalResourceId"`
	RequestID          string `json:"RequestId"`
	LogicalResourceID  string `json:"LogicalResourceId"`
	StackID            string `json:"StackId"`
	Data               map[string]any
	unreadable         bool // not a response document: Reason says why
}

// maxAnswer is the longest response document CloudFormation takes ("Response object is too
// long": 4,096 bytes).
const maxAnswer = 4096

// stringified returns v with its numbers and booleans as strings: CloudFormation sends a custom
// resource's properties so, whatever the template wrote.
func stringified(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = stringified(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stringified(e)
		}
		return out
	case float64, int, int64, bool, json.Number:
		return fmt.Sprint(x)
	}
	return v
}

// answers serves the ResponseURLs: PUT /<request id>.
type answers struct {
	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	got  map[string]chan answer
	port int
}

func newAnswers() (*answers, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("devstack: custom resources' response server: %w", err)
	}
	a := &answers{ln: ln, got: map[string]chan answer{}, port: ln.Addr().(*net.TCPAddr).Port}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

func (a *answers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	ch, ok := a.got[strings.TrimPrefix(r.URL.Path, "/")]
	a.mu.Unlock()
	if r.Method != http.MethodPut || !ok {
		http.Error(w, "no such request", http.StatusNotFound)
		return
	}
	var ans answer
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAnswer+1))
	switch {
	case err != nil:
	case len(body) > maxAnswer:
		//lint:ignore ST1005 CloudFormation's own words for it, so a user can search them
		err = fmt.Errorf("Response object is too long (more than %d bytes)", maxAnswer)
	default:
		err = json.Unmarshal(body, &ans)
	}
	if err != nil {
		ans = answer{Status: "FAILED", Reason: fmt.Sprintf("the provider's answer is not a response document: %v", err), unreadable: true}
	}
	select {
	case ch <- ans:
	default: // answered twice: CloudFormation takes the first
	}
	w.WriteHeader(http.StatusOK)
}

// expect registers a request and returns its ResponseURL and where its answer arrives.
func (a *answers) expect(requestID string) (string, <-chan answer) {
	ch := make(chan answer, 1)
	a.mu.Lock()
	a.got[requestID] = ch
	a.mu.Unlock()
	return "http://127.0.0.1:" + strconv.Itoa(a.port) + "/" + requestID, ch
}

func (a *answers) close() { _ = a.srv.Close() }

// createCustomResources has each custom resource's provider create it, in deployment order. A
// provider that cannot run here (an SNS topic, a function listed as unrunnable) is reported and
// its resource left uncreated; a provider's FAILED answer fails the start, as it fails a
// deployment on AWS.
func (s *Stack) createCustomResources(ctx context.Context, cfg *Config, creds aws.Credentials, outMu *sync.Mutex) error {
	d := cfg.Deployment
	if len(d.CustomResources) == 0 {
		return nil
	}
	srv, err := newAnswers()
	if err != nil {
		return err
	}
	// The server and the providers' runtimes stay for DeleteCustomResources; Stop closes them.
	s.customSrv = srv
	opts := s.runtimeOptions(cfg, creds)
	opts.ExtraEnv[envResponsePort] = strconv.Itoa(srv.port)
	runtimes := map[string]*lambdaruntime.Runtime{}
	s.customRuntimes = runtimes
	// In dependency order: a resource whose properties hold another's Ref or data (its token)
	// waits for it, as CloudFormation orders them.
	done := make([]bool, len(d.CustomResources))
	for range d.CustomResources {
		i := nextCustomResource(d.CustomResources, done)
		if i < 0 {
			var waiting []string
			for j, cr := range d.CustomResources {
				if !done[j] {
					waiting = append(waiting, cr.LogicalID)
				}
			}
			return fmt.Errorf("devstack: custom resources %s refer to each other in a cycle", strings.Join(waiting, ", "))
		}
		done[i] = true
		cr := d.CustomResources[i]
		fn := d.FunctionByName(cr.ServiceToken)
		why := ""
		switch {
		case fn == nil:
			why = "its provider (" + cr.ServiceToken + ") is not a function of the app"
		case fn.Unrunnable != "":
			why = "its provider " + fn.Name + " cannot run here: " + fn.Unrunnable
		}
		if why != "" {
			cfg.Logger.Warn("custom resource not created", "resource", cr.LogicalID, "type", cr.Type, "reason", why)
			d.Skipped = append(d.Skipped, deploy.Skipped{Stack: cr.Stack, LogicalID: cr.LogicalID, Type: cr.Type, Reason: "not created: " + why})
			continue
		}
		rt := runtimes[fn.Name]
		if rt == nil {
			o := opts
			o.Output = &prefixWriter{mu: outMu, w: cfg.Output, prefix: []byte("[" + fn.Name + "] ")}
			if rt, err = lambdaruntime.New(fn.RuntimeFunction(1), &o); err != nil {
				return fmt.Errorf("devstack: custom resource %s: %w", cr.LogicalID, err)
			}
			runtimes[fn.Name] = rt
		}
		ans, err := s.customRequest(ctx, srv, rt, cr, "Create", "")
		if err != nil {
			return err
		}
		made := CustomResource{CustomResource: cr, PhysicalResourceID: ans.PhysicalResourceID, Data: ans.Data, provider: fn.Name}
		if missing := fillCustomTokens(d, made); len(missing) > 0 {
			return &CustomResourceError{LogicalID: cr.LogicalID, Type: cr.Type,
				Reason: "its provider's data has no attribute " + strings.Join(missing, ", ") + ", which the stack reads (Fn::GetAtt)"}
		}
		cfg.Logger.Info("custom resource created", "resource", cr.LogicalID, "type", cr.Type, "physical_id", made.PhysicalResourceID)
		s.custom = append(s.custom, made)
	}
	for _, fn := range d.Functions {
		for k, v := range fn.Env {
			if strings.Contains(v, customTokenPrefix) {
				cfg.Logger.Warn("a function's environment names a custom resource that was not created", "function", fn.Name, "variable", k, "value", v)
			}
		}
	}
	return nil
}

// customTokenPrefix starts every custom resource token (deploy.CustomToken).
const customTokenPrefix = "{{jobkit:custom-resource:"

// tokenPrefix starts the tokens of one custom resource: its Ref's and its attributes'.
func tokenPrefix(stack, logicalID string) string {
	t := deploy.CustomToken(stack, logicalID, "")
	return strings.TrimSuffix(t, "}}")
}

// nextCustomResource returns the first resource not done whose properties name no resource that
// is not done, or -1.
func nextCustomResource(crs []deploy.CustomResource, done []bool) int {
	for i, cr := range crs {
		if done[i] {
			continue
		}
		props, _ := json.Marshal(cr.Properties)
		waits := false
		for j, other := range crs {
			if j != i && !done[j] && strings.Contains(string(props), tokenPrefix(other.Stack, other.LogicalID)) {
				waits = true
				break
			}
		}
		if !waits {
			return i
		}
	}
	return -1
}

// fillCustomTokens puts a created custom resource's physical id and data where the deployment
// holds its Ref and Fn::GetAtt tokens (deploy.CustomToken): the functions' environments, the
// custom resources still to create, the stacks' outputs and exports. It returns the attributes
// read that its data lacks (CloudFormation fails the stack then).
func fillCustomTokens(d *deploy.Deployment, made CustomResource) []string {
	data := map[string]string{}
	for k, v := range made.Data {
		if s, ok := v.(string); ok {
			data[k] = s
		} else if b, err := json.Marshal(v); err == nil {
			data[k] = string(b)
		}
	}
	own := tokenPrefix(made.Stack, made.LogicalID)
	var missing []string
	fill := func(s string) string {
		s = deploy.ReplaceCustomTokens(s, made.Stack, made.LogicalID, made.PhysicalResourceID, data)
		for rest := s; ; {
			i := strings.Index(rest, own)
			if i < 0 {
				break
			}
			attr, _, _ := strings.Cut(rest[i+len(own):], "}}")
			if !slices.Contains(missing, attr) {
				missing = append(missing, attr)
			}
			rest = rest[i+len(own):]
		}
		return s
	}
	for i := range d.Functions {
		env := maps.Clone(d.Functions[i].Env) // a new map: runtimes made before hold the old one
		for k, v := range env {
			env[k] = fill(v)
		}
		d.Functions[i].Env = env
	}
	for i := range d.CustomResources {
		d.CustomResources[i].Properties, _ = fillAny(d.CustomResources[i].Properties, fill).(map[string]any)
	}
	for i := range d.Stacks {
		for k, v := range d.Stacks[i].Outputs {
			d.Stacks[i].Outputs[k] = fill(v)
		}
		for k, v := range d.Stacks[i].Exports {
			d.Stacks[i].Exports[k] = fill(v)
		}
	}
	return missing
}

// fillAny applies fill to every string in v.
func fillAny(v any, fill func(string) string) any {
	switch x := v.(type) {
	case string:
		return fill(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fillAny(e, fill)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fillAny(e, fill)
		}
		return out
	}
	return v
}

// customRequest sends one request (Create, or Delete with the resource's physical id) and waits
// for its SUCCESS answer.
func (s *Stack) customRequest(ctx context.Context, srv *answers, rt *lambdaruntime.Runtime, cr deploy.CustomResource, requestType, physicalID string) (answer, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // a version 4 UUID, as CloudFormation's request ids
	h := hex.EncodeToString(b[:])
	requestID := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	url, got := srv.expect(requestID)
	request := map[string]any{
		"RequestType": requestType, "ServiceToken": cr.ServiceToken, "ResponseURL": url, "StackId": cr.StackID,
		"RequestId": requestID, "LogicalResourceId": cr.LogicalID, "ResourceType": cr.Type,
		"ResourceProperties": stringified(cr.Properties),
	}
	if physicalID != "" {
		request["PhysicalResourceId"] = physicalID
	}
	event, err := json.Marshal(request)
	if err != nil {
		return answer{}, fmt.Errorf("devstack: custom resource %s: %w", cr.LogicalID, err)
	}
	fail := func(reason string) (answer, error) {
		return answer{}, &CustomResourceError{LogicalID: cr.LogicalID, Type: cr.Type, Request: requestType, Reason: reason}
	}
	res, err := rt.Invoke(ctx, event)
	if err != nil {
		return fail(fmt.Sprintf("invoking its provider: %v", err))
	}
	// A provider answers before its invocation ends; a moment's grace for the PUT in flight.
	var ans answer
	select {
	case ans = <-got:
	case <-time.After(2 * time.Second):
		why := "its provider returned without answering"
		if err := res.Err(); err != nil {
			why = fmt.Sprintf("its provider failed without answering: %v", err)
		}
		return fail(why)
	}
	if !ans.unreadable && (ans.RequestID != requestID || ans.LogicalResourceID != cr.LogicalID || ans.StackID != cr.StackID) {
		return fail(fmt.Sprintf("its provider's answer is for another request (RequestId %q, LogicalResourceId %q, StackId %q)", ans.RequestID, ans.LogicalResourceID, ans.StackID))
	}
	if ans.Status != "SUCCESS" {
		reason := cmp.Or(ans.Reason, "its provider answered "+cmp.Or(ans.Status, "no status"))
		if strings.Contains(reason, "@aws-sdk/") && (strings.Contains(reason, "Cannot find module") || strings.Contains(reason, "does not exist")) {
			reason += " (Lambda's Node.js runtimes provide the AWS SDK for JavaScript; offline, set JOBKIT_NODE_MODULES to a node_modules directory that holds it: npm install --prefix DIR @aws-sdk/client-<service>, then DIR/node_modules)"
		}
		return fail(reason)
	}
	if ans.PhysicalResourceID == "" {
		return fail("its provider answered without a PhysicalResourceId")
	}
	return ans, nil
}

// DeleteCustomResources sends the Delete request of every custom resource the stack created, in
// the reverse of their creation order, as CloudFormation does when a stack is deleted (Running.Down
// calls it before Stop). A provider that fails its Delete is reported in the error; the others
// still get theirs. Each resource gets its Delete once.
func (s *Stack) DeleteCustomResources(ctx context.Context) error {
	var errs []error
	for i := len(s.custom) - 1; i >= 0; i-- {
		cr := s.custom[i]
		rt := s.customRuntimes[cr.provider]
		if rt == nil || s.customSrv == nil {
			continue
		}
		if _, err := s.customRequest(ctx, s.customSrv, rt, cr.CustomResource, "Delete", cr.PhysicalResourceID); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Info("custom resource deleted", "resource", cr.LogicalID, "type", cr.Type, "physical_id", cr.PhysicalResourceID)
	}
	s.custom = nil
	return errors.Join(errs...)
}

// closeCustom closes the custom resources' server and their providers' runtimes.
func (s *Stack) closeCustom() {
	for _, rt := range s.customRuntimes {
		_ = rt.Close()
	}
	s.customRuntimes = nil
	if s.customSrv != nil {
		s.customSrv.close()
		s.customSrv = nil
	}
}

// CustomResources returns the custom resources the stack created, with their providers' answers.
func (s *Stack) CustomResources() []CustomResource {
	return append([]CustomResource(nil), s.custom...)
}
