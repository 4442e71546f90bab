package awstest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The emulator answers no web page: a request or a preflight from another origin gets no
// Access-Control-Allow-Origin header (moto's server reflects any Origin unless told not to), so a
// page the developer visits while the stack runs can neither read local state nor enqueue jobs.
// The SDK sends no Origin, so nothing of the stack needs CORS.
func TestEmulatorRefusesCrossOrigin(t *testing.T) {
	t.Parallel()
	awstest.Config(t) // skips (or fails under JOBKIT_REQUIRE_EMULATOR) when no endpoint answers
	endpoint := awstest.Endpoint()
	if endpoint == "" {
		t.Skip("real AWS: CORS is the service's own")
	}
	const foreign = "http://evil.example"
	for _, tc := range []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   string
	}{
		{name: "preflight", method: http.MethodOptions, path: "/", header: map[string]string{
			"Access-Control-Request-Method":  "POST",
			"Access-Control-Request-Headers": "content-type,x-amz-target",
		}},
		{name: "SQS call", method: http.MethodPost, path: "/", body: "{}", header: map[string]string{
			"Content-Type": "application/x-amz-json-1.0",
			"X-Amz-Target": "AmazonSQS.ListQueues",
		}},
		{name: "state dump", method: http.MethodGet, path: "/moto-api/data.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, strings.TrimSuffix(endpoint, "/")+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Origin", foreign)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "%s %s from %s: status %s", tc.method, tc.path, foreign, resp.Status)
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"))
		})
	}
}
