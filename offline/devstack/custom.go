package devstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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
}

// CustomResourceError is a custom resource whose provider failed it (or never answered): on AWS
// the deployment fails and rolls back.
type CustomResourceError struct {
	LogicalID, Type, Reason string
}

func (e *CustomResourceError) Error() string {
	return fmt.Sprintf("devstack: custom resource %s (%s) failed: %s", e.LogicalID, e.Type, e.Reason)
}

// answer is a provider's response document.
type answer struct {
	Status             string
	Reason             string
	PhysicalResourceID string `json:"PhysicalResourceId"`
	Data               map[string]any
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
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &ans)
	}
	if err != nil {
		ans = answer{Status: "FAILED", Reason: fmt.Sprintf("the provider's answer is not a response document: %v", err)}
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
	defer srv.close()
	opts := s.runtimeOptions(cfg, creds)
	opts.ExtraEnv[envResponsePort] = strconv.Itoa(srv.port)
	runtimes := map[string]*lambdaruntime.Runtime{}
	defer func() {
		for _, rt := range runtimes {
			_ = rt.Close()
		}
	}()
	for i := range d.CustomResources {
		cr := d.CustomResources[i]
		fn := d.FunctionByName(cr.ServiceToken)
		switch {
		case fn == nil:
			cfg.Logger.Warn("custom resource not created: its provider is not a function of the app", "resource", cr.LogicalID, "type", cr.Type, "service_token", cr.ServiceToken)
			continue
		case fn.Unrunnable != "":
			cfg.Logger.Warn("custom resource not created: its provider cannot run here", "resource", cr.LogicalID, "type", cr.Type, "function", fn.Name, "reason", fn.Unrunnable)
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
		made, err := s.createCustomResource(ctx, srv, rt, cr)
		if err != nil {
			return err
		}
		cfg.Logger.Info("custom resource created", "resource", cr.LogicalID, "type", cr.Type, "physical_id", made.PhysicalResourceID)
		s.custom = append(s.custom, made)
		fillCustomTokens(d, made)
	}
	return nil
}

// fillCustomTokens puts a created custom resource's physical id and data where the deployment
// holds its Ref and Fn::GetAtt tokens (deploy.CustomToken): the functions' environments, the
// custom resources still to create, the stacks' outputs and exports.
func fillCustomTokens(d *deploy.Deployment, made CustomResource) {
	data := map[string]string{}
	for k, v := range made.Data {
		if s, ok := v.(string); ok {
			data[k] = s
		} else if b, err := json.Marshal(v); err == nil {
			data[k] = string(b)
		}
	}
	fill := func(s string) string {
		return deploy.ReplaceCustomTokens(s, made.Stack, made.LogicalID, made.PhysicalResourceID, data)
	}
	for i := range d.Functions {
		for k, v := range d.Functions[i].Env {
			d.Functions[i].Env[k] = fill(v)
		}
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

// createCustomResource sends one Create request and waits for its answer.
func (s *Stack) createCustomResource(ctx context.Context, srv *answers, rt *lambdaruntime.Runtime, cr deploy.CustomResource) (CustomResource, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	requestID := hex.EncodeToString(b[:])
	url, got := srv.expect(requestID)
	event, err := json.Marshal(map[string]any{
		"RequestType": "Create", "ServiceToken": cr.ServiceToken, "ResponseURL": url, "StackId": cr.StackID,
		"RequestId": requestID, "LogicalResourceId": cr.LogicalID, "ResourceType": cr.Type, "ResourceProperties": cr.Properties,
	})
	if err != nil {
		return CustomResource{}, fmt.Errorf("devstack: custom resource %s: %w", cr.LogicalID, err)
	}
	fail := func(reason string) (CustomResource, error) {
		return CustomResource{}, &CustomResourceError{LogicalID: cr.LogicalID, Type: cr.Type, Reason: reason}
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
	return CustomResource{CustomResource: cr, PhysicalResourceID: ans.PhysicalResourceID, Data: ans.Data}, nil
}

// CustomResources returns the custom resources the stack created, with their providers' answers.
func (s *Stack) CustomResources() []CustomResource {
	return append([]CustomResource(nil), s.custom...)
}
