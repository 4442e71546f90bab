package console

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// offline is a console whose AWS endpoint does not answer: what these tests check happens before
// any AWS call, and a request that gets past the checks fails with 502, not 403.
func offline(t *testing.T, o Options) (*Server, *httptest.Server) {
	t.Helper()
	cfg := aws.Config{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	o.Target = inspect.Target{Queues: []string{"http://127.0.0.1:1/000000000000/q"}}
	s, err := New(context.Background(), inspect.New(cfg), o)
	require.NoError(t, err)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

// do sends a request with the given headers (Host overrides the Host header).
func do(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// unreachableJobs is a JobOperator whose every call fails as an unreachable endpoint would.
type unreachableJobs struct{}

func (unreachableJobs) Cancel(context.Context, string) (jobs.JobStatus, error) {
	return jobs.JobStatus{}, errors.New("dial tcp 127.0.0.1:1: connection refused")
}

func (unreachableJobs) RetryNow(context.Context, string) (jobs.JobStatus, error) {
	return jobs.JobStatus{}, errors.New("dial tcp 127.0.0.1:1: connection refused")
}

// actionPaths are every state-changing request the console serves.
var actionPaths = []string{"/api/redrive", "/api/purge", "/api/jobs/cancel", "/api/jobs/retry", "/api/schedules/pause", "/api/schedules/resume", "/api/schedules/fire"}

func TestActionsNeedTheToken(t *testing.T) {
	t.Parallel()
	s, hs := offline(t, Options{Jobs: unreachableJobs{}})
	body := `{"queue":"q","all":true,"id":"j1","group":"g","name":"n"}`
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"no token", map[string]string{"Content-Type": "application/json"}, http.StatusForbidden},
		{"wrong token", map[string]string{"Content-Type": "application/json", TokenHeader: "nope"}, http.StatusForbidden},
		{"token of another length", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token() + "0"}, http.StatusForbidden},
		{"form post", map[string]string{"Content-Type": "application/x-www-form-urlencoded", TokenHeader: s.Token()}, http.StatusUnsupportedMediaType},
		{"cross-site fetch", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token(), "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token(), "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign origin", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token(), "Origin": "http://evil.example"}, http.StatusForbidden},
		// Past every check: the (unreachable) endpoint answers, so 502.
		{"same origin with the token", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token(), "Sec-Fetch-Site": "same-origin", "Origin": hs.URL}, http.StatusBadGateway},
		{"no browser headers, with the token", map[string]string{"Content-Type": "application/json", TokenHeader: s.Token()}, http.StatusBadGateway},
	} {
		for _, path := range actionPaths {
			res, got := do(t, http.MethodPost, hs.URL+path, body, c.headers)
			require.Equal(t, c.want, res.StatusCode, "%s %s: %s", c.name, path, got)
			require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), c.name)
		}
	}
}

func TestReadOnlyHidesAndRefusesActions(t *testing.T) {
	t.Parallel()
	s, hs := offline(t, Options{ReadOnly: true, Jobs: unreachableJobs{}})
	res, page := do(t, http.MethodGet, hs.URL+"/?queue=q", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `id="read-only"`)
	require.NotContains(t, page, s.Token())
	require.NotContains(t, page, "jobkit-token")
	require.NotContains(t, page, "Redrive")
	require.NotContains(t, page, "Purge")
	for _, path := range actionPaths {
		res, got := do(t, http.MethodPost, hs.URL+path, `{"queue":"q","all":true,"id":"j1","group":"g","name":"n"}`,
			map[string]string{"Content-Type": "application/json", TokenHeader: s.Token(), "Origin": hs.URL})
		require.Equal(t, http.StatusForbidden, res.StatusCode, got)
		require.Contains(t, got, "read-only")
	}
}

func TestOnlyLoopbackHostsAndSameSiteReads(t *testing.T) {
	t.Parallel()
	_, hs := offline(t, Options{Hosts: []string{"console.internal"}})
	port := hs.URL[strings.LastIndex(hs.URL, ":")+1:]
	for host, want := range map[string]int{
		"evil.example:" + port:     http.StatusMisdirectedRequest, // DNS rebinding
		"localhost:" + port:        http.StatusBadGateway,
		"[::1]:" + port:            http.StatusBadGateway,
		"console.internal:" + port: http.StatusBadGateway,
	} {
		res, got := do(t, http.MethodGet, hs.URL+"/api/queues", "", map[string]string{"Host": host})
		require.Equal(t, want, res.StatusCode, "%s: %s", host, got)
	}
	// Another site may link to the console's front page, not read its API or list a DLQ.
	res, _ := do(t, http.MethodGet, hs.URL+"/api/dead?queue=q", "", map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = do(t, http.MethodGet, hs.URL+"/?queue=q", "", map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = do(t, http.MethodGet, hs.URL+"/", "", map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestEveryResponseHasTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	s, hs := offline(t, Options{})
	for path, ctype := range map[string]string{
		"/":                   "text/html; charset=utf-8",
		"/static/console.js":  "text/javascript; charset=utf-8",
		"/static/console.css": "text/css; charset=utf-8",
		"/api/queues":         "application/json; charset=utf-8",
		"/api/status?id=x":    "application/json; charset=utf-8",
	} {
		res, body := do(t, http.MethodGet, hs.URL+path, "", nil)
		require.Equal(t, ctype, res.Header.Get("Content-Type"), path)
		require.Equal(t, ContentSecurityPolicy, res.Header.Get("Content-Security-Policy"), path)
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), path)
		require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"), path)
		require.Equal(t, "no-referrer", res.Header.Get("Referrer-Policy"), path)
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"), path)
		csp := strings.Split(res.Header.Get("Content-Security-Policy"), "; ")
		for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
			require.Contains(t, csp, directive, path) // docs/console.md: no inline script or style, never framed
		}
		if path == "/" {
			// The token is in a meta tag for the page's script; no inline script, no inline style.
			require.Contains(t, body, `<meta name="jobkit-token" content="`+s.Token()+`">`)
			require.NotRegexp(t, `<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=`, body)
			require.Contains(t, body, "The job state table is not deployed")
		}
	}
}

// A dead job's data is whatever someone sent: markup, control characters, bidirectional
// overrides, bytes that are not UTF-8 (SQS refuses those in a body, but a listing's parser must
// not trust that). The page and the JSON show all of it as inert, visible text.
func TestHostileDeadJobRendersAsText(t *testing.T) {
	t.Parallel()
	body := "{\"v\":1,\"id\":\"evil\",\"kind\":\"x\",\"args\":{\"s\":\"</pre><script>alert(1)</script>\"}}\xff\xfe\x1b[2J\u202e"
	m := sqstypes.Message{
		MessageId: aws.String("m-1"), Body: aws.String(body),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"jobkit.kind":  {DataType: aws.String("String"), StringValue: aws.String("<script>alert(2)</script>")},
			"jobkit.error": {DataType: aws.String("String"), StringValue: aws.String("bad \xc3\x28 byte <img src=x onerror=alert(3)>")},
			"x-extra":      {DataType: aws.String("String"), StringValue: aws.String("\"><svg onload=alert(4)>")},
		},
	}
	j := inspect.ParseDeadJob(m)
	ev := toEnvelopeView(&j)
	d := &pageData{Selected: "q", JobRef: "evil", Dead: &deadListView{Queue: "q", Jobs: []deadView{ev.deadView}}, Job: &ev}
	var buf bytes.Buffer
	require.NoError(t, pageTemplate.Execute(&buf, d))
	page := buf.String()
	require.True(t, utf8.ValidString(page), "the page is valid UTF-8")
	for _, raw := range []string{"<script>alert", "<img src", "<svg", "</pre><script>", "\x1b", "\u202e"} {
		require.NotContains(t, page, raw)
	}
	for _, shown := range []string{"&lt;script&gt;alert(2)&lt;/script&gt;", `\xff\xfe`, `\x1b[2J`, `\u202e`, `bad \xc3(`, "&lt;svg onload=alert(4)&gt;"} {
		require.Contains(t, page, shown)
	}
}

func TestListsCutHugeBodies(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("A", 300_000)
	j := inspect.ParseDeadJob(sqstypes.Message{MessageId: aws.String("m"), Body: aws.String(huge)})
	v := toDeadView(&j)
	require.True(t, v.Cut)
	require.Equal(t, 300_000, v.BodyBytes)
	require.LessOrEqual(t, utf8.RuneCountInString(v.Body), previewWidth)
	require.Len(t, toEnvelopeView(&j).FullBody, 300_000)
}

// The status panel shows a running job's progress, its note as text.
func TestStatusRowsShowProgress(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rows := statusRows(jobs.JobStatus{ID: "j1", State: jobs.StateRunning, Progress: &jobs.Progress{Percent: 80, Note: "almost\u202e", At: at}})
	var got string
	for _, r := range rows {
		if r.Field == "progress" {
			got = r.Value
		}
	}
	require.Equal(t, `80% almost\u202e (2026-11-27 12:00:00.000)`, got)
}

// The page refreshes its queue table every 3 s unless told otherwise (docs/console.md): the
// period reaches console.js through the page's jobkit-refresh meta tag.
func TestRefreshDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		refresh time.Duration
		want    string
	}{{0, "3000"}, {5 * time.Second, "5000"}} {
		_, hs := offline(t, Options{Refresh: c.refresh})
		res, body := do(t, http.MethodGet, hs.URL+"/", "", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, body, `<meta name="jobkit-refresh" content="`+c.want+`">`)
	}
}

// A dead-job listing shows at most 50 jobs unless ListLimit says otherwise (docs/console.md).
func TestListLimitDefault(t *testing.T) {
	t.Parallel()
	s, _ := offline(t, Options{})
	require.Equal(t, 50, s.o.ListLimit)
	s, _ = offline(t, Options{ListLimit: 7})
	require.Equal(t, 7, s.o.ListLimit)
}
