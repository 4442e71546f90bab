package loopback_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/loopback"
)

func TestGuardRefusesWebPagesAndForeignHosts(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(loopback.Guard(ok))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"a local program", nil, http.StatusNoContent},
		{"localhost", map[string]string{"Host": "localhost:9001"}, http.StatusNoContent},
		{"a page's fetch", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a cross-site navigation", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"DNS rebinding", map[string]string{"Host": "evil.example:9001"}, http.StatusForbidden},
	} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/2018-06-01/runtime/invocation/next", nil)
		require.NoError(t, err)
		for k, v := range c.headers {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, c.want, res.StatusCode, c.name)
	}
}
