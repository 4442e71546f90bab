package lambdaruntime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests drive one environment's Runtime API over HTTP, as a runtime would, with the hand-out
// done by the test instead of a Runtime.

const testARN = "arn:aws:lambda:us-east-1:123456789012:function:fn"

type apiHarness struct {
	t    *testing.T
	api  *apiServer
	srv  *httptest.Server
	base string
	now  time.Time
}

func newAPIHarness(t *testing.T) *apiHarness {
	t.Helper()
	h := &apiHarness{t: t, now: time.UnixMilli(1_700_000_000_000)}
	h.api = newAPIServer(testARN, nil)
	h.api.now = func() time.Time { return h.now }
	h.srv = httptest.NewServer(h.api)
	t.Cleanup(func() { h.api.close(); h.srv.Close() })
	h.base = h.srv.URL + "/2018-06-01/runtime/"
	return h
}

// next performs invocation/next while the test hands out inv.
func (h *apiHarness) next(inv *invocation) *http.Response {
	h.t.Helper()
	go func() { h.api.handout <- inv }()
	resp, err := http.Get(h.base + "invocation/next")
	require.NoError(h.t, err)
	return resp
}

func (h *apiHarness) post(path, contentType, body string, header map[string]string) (int, ErrorPayload) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	var e ErrorPayload
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestAPINextCarriesTheEventAndItsHeaders(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	inv := newInvocation([]byte(`{"hello":"world"}`), 7*time.Second)
	resp := h.next(inv)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `{"hello":"world"}`, readBody(t, resp))
	require.Equal(t, inv.id, resp.Header.Get("Lambda-Runtime-Aws-Request-Id"))
	require.Equal(t, strconv.FormatInt(h.now.Add(7*time.Second).UnixMilli(), 10), resp.Header.Get("Lambda-Runtime-Deadline-Ms"))
	require.Equal(t, testARN, resp.Header.Get("Lambda-Runtime-Invoked-Function-Arn"))
	require.Regexp(t, `^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0$`, resp.Header.Get("Lambda-Runtime-Trace-Id"))
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, inv.id)
	select {
	case <-inv.started:
	default:
		t.Fatal("invocation not marked started")
	}
	select {
	case <-h.api.ready:
	default:
		t.Fatal("first invocation/next did not end init")
	}
}

func TestAPIResponseIsAcceptedOnceForTheCurrentRequest(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	inv := newInvocation([]byte(`{}`), time.Second)
	readBody(t, h.next(inv))

	code, e := h.post("invocation/not-the-id/response", "application/json", `1`, nil)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "InvalidRequestID", e.Type)

	code, _ = h.post("invocation/"+inv.id+"/response", "application/json", `{"ok":true}`, nil)
	require.Equal(t, http.StatusAccepted, code)
	<-inv.done
	require.Nil(t, inv.errPay)
	require.Equal(t, `{"ok":true}`, string(inv.response))

	code, e = h.post("invocation/"+inv.id+"/response", "application/json", `2`, nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "InvalidStateTransition", e.Type)
	code, _ = h.post("invocation/"+inv.id+"/error", "application/json", `{}`, nil)
	require.Equal(t, http.StatusForbidden, code)
}

func TestAPIErrorPayloads(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		header     map[string]string
		want       ErrorPayload
	}{
		{"document", `{"errorType":"MyError","errorMessage":"boom","stackTrace":["a"]}`, nil,
			ErrorPayload{Type: "MyError", Message: "boom", StackTrace: json.RawMessage(`["a"]`)}},
		{"type from header", `{"errorMessage":"boom"}`, map[string]string{"Lambda-Runtime-Function-Error-Type": "Runtime.Custom"},
			ErrorPayload{Type: "Runtime.Custom", Message: "boom"}},
		{"not json", "plain failure\n", nil, ErrorPayload{Type: "Unhandled", Message: "plain failure"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newAPIHarness(t)
			inv := newInvocation([]byte(`{}`), time.Second)
			readBody(t, h.next(inv))
			code, _ := h.post("invocation/"+inv.id+"/error", "application/json", tc.body, tc.header)
			require.Equal(t, http.StatusAccepted, code)
			<-inv.done
			require.Equal(t, &tc.want, inv.errPay)
		})
	}
}

func TestAPIResponseTooLarge(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	h.api.maxResponse = 10
	inv := newInvocation([]byte(`{}`), time.Second)
	readBody(t, h.next(inv))
	code, e := h.post("invocation/"+inv.id+"/response", "application/json", `"0123456789"`, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, ErrorTypeResponseTooLarge, e.Type)
	<-inv.done
	require.Equal(t, ErrorTypeResponseTooLarge, inv.errPay.Type)
}

// aws-lambda-go streams responses and reports a failing reader in trailers.
func TestAPIResponseErrorTrailers(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	inv := newInvocation([]byte(`{}`), time.Second)
	readBody(t, h.next(inv))

	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, h.base+"invocation/"+inv.id+"/response", pr)
	require.NoError(t, err)
	req.Trailer = http.Header{"Lambda-Runtime-Function-Error-Type": nil, "Lambda-Runtime-Function-Error-Body": nil}
	go func() {
		_, _ = pw.Write([]byte(`{"partial":`))
		req.Trailer.Set("Lambda-Runtime-Function-Error-Type", "ReaderError")
		req.Trailer.Set("Lambda-Runtime-Function-Error-Body",
			base64.StdEncoding.EncodeToString([]byte(`{"errorType":"ReaderError","errorMessage":"stream broke"}`)))
		pw.Close()
	}()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	<-inv.done
	require.Equal(t, &ErrorPayload{Type: "ReaderError", Message: "stream broke"}, inv.errPay)
}

func TestAPIInitError(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	code, _ := h.post("init/error", "application/json", `{"errorType":"Init.Bad","errorMessage":"no config"}`, nil)
	require.Equal(t, http.StatusAccepted, code)
	errPay, err := h.api.waitReady(context.Background(), make(chan struct{}), time.Minute)
	require.NoError(t, err)
	require.Equal(t, &ErrorPayload{Type: "Init.Bad", Message: "no config"}, errPay)
	code, e := h.post("init/error", "application/json", `{}`, nil)
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "InvalidStateTransition", e.Type)
}

func TestAPIInitErrorAfterInitIsRefused(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	readBody(t, h.next(newInvocation([]byte(`{}`), time.Second)))
	code, _ := h.post("init/error", "application/json", `{}`, nil)
	require.Equal(t, http.StatusForbidden, code)
}

func TestAPINextWithoutAnsweringFailsTheInvocation(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	first := newInvocation([]byte(`1`), time.Second)
	readBody(t, h.next(first))
	second := newInvocation([]byte(`2`), time.Second)
	require.Equal(t, "2", readBody(t, h.next(second)))
	<-first.done
	require.Equal(t, ErrorTypeNoResponse, first.errPay.Type)
	select {
	case <-first.released:
	default:
		t.Fatal("first invocation not released by the next invocation/next")
	}
}

func TestAPIParkedNextAnswers500OnClose(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	go func() { time.Sleep(50 * time.Millisecond); h.api.close() }()
	resp, err := http.Get(h.base + "invocation/next")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
}

func TestAPIRejectsUnknownPathsAndMethods(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t)
	for _, p := range []string{"invocation/x/other", "invocation//response", "whatever"} {
		code, _ := h.post(p, "application/json", `{}`, nil)
		require.Equal(t, http.StatusNotFound, code, p)
	}
	resp, err := http.Get(h.srv.URL + "/2020-01-01/extension/register")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	code, _ := h.post("invocation/next", "application/json", ``, nil)
	require.Equal(t, http.StatusMethodNotAllowed, code)
	resp, err = http.Get(h.base + "init/error")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
