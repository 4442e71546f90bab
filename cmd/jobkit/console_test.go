package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// `jobkit console` prints its URL and serves the page there until its context ends.
func TestConsolePrintsItsURLAndServes(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	q, _ := awstest.QueueWithDLQ(t, cfg, "q", nil)

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		args := []string{"console", "--addr", "127.0.0.1:0", "--read-only", "--queue", q.URL}
		if ep := awstest.Endpoint(); ep != "" {
			args = append([]string{"--endpoint", ep}, args...)
		}
		var errOut strings.Builder
		done <- run(ctx, args, strings.NewReader(""), pw, &errOut)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^jobkit console \(read-only\): http://127\.0\.0\.1:\d+/\n$`, line)
	url := strings.TrimSpace(line[strings.Index(line, "http://"):])
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	res, err := http.Get(url + "?queue=" + q.Name)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, string(body), q.Name)
	require.Contains(t, string(body), "read-only")
	require.NotContains(t, string(body), "jobkit-token")

	cancel()
	require.Equal(t, exitOK, <-done)
}

// startConsole runs `jobkit console` with args and returns its URL (the listener it printed).
func startConsole(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		if ep := awstest.Endpoint(); ep != "" {
			args = append([]string{"--endpoint", ep}, args...)
		}
		var errOut strings.Builder
		done <- run(ctx, append([]string{"console"}, args...), strings.NewReader(""), pw, &errOut)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		require.Equal(t, exitOK, <-done)
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return strings.TrimSpace(line[strings.Index(line, "http://"):])
}

// Beyond loopback the console does not start without a secret.
func TestConsoleBeyondLoopbackNeedsASecret(t *testing.T) {
	t.Setenv(consoleSecretEnv, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0"} {
		var out, errOut strings.Builder
		code := run(context.Background(), []string{"console", "--addr", addr, "--queue", "http://127.0.0.1:1/000000000000/q"}, strings.NewReader(""), &out, &errOut)
		require.Equal(t, exitUsage, code, "%s: %s", addr, errOut.String())
		require.Contains(t, errOut.String(), "needs a secret", addr)
		require.Empty(t, out.String(), "%s: nothing served", addr)
	}
	var out, errOut strings.Builder
	t.Setenv(consoleSecretEnv, "short")
	code := run(context.Background(), []string{"console", "--addr", "0.0.0.0:0", "--queue", "http://127.0.0.1:1/000000000000/q"}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut.String(), "at least 16")
}

// With a secret, every route answers 401 to a request without it, and serves one with it.
func TestConsoleWithASecretRefusesRequestsWithoutIt(t *testing.T) {
	cfg := awstest.Config(t)
	q, _ := awstest.QueueWithDLQ(t, cfg, "q", nil)
	secret := "0123456789abcdef0123456789abcdef"
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))
	url := startConsole(t, nil, "--addr", "0.0.0.0:0", "--secret-file", file, "--queue", q.URL)
	url = strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
	url = strings.Replace(url, "[::]", "127.0.0.1", 1)

	for _, route := range []string{"/", "/static/console.js", "/api/queues", "/api/dead?queue=" + q.Name, "/api/envelope?queue=" + q.Name + "&id=x",
		"/api/schedules", "/api/status?id=x", "/api/tasks/1"} {
		res, err := http.Get(url + strings.TrimPrefix(route, "/"))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, route)
		require.Contains(t, res.Header.Get("WWW-Authenticate"), "Basic", route)
	}
	for _, route := range []string{"/api/redrive", "/api/purge"} {
		res, err := http.Post(url+strings.TrimPrefix(route, "/"), "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, route)
	}
	req, err := http.NewRequest(http.MethodGet, url+"api/queues", nil)
	require.NoError(t, err)
	req.SetBasicAuth("anyone", "wrong-secret-wrong-secret")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "a wrong secret")

	req.SetBasicAuth("anyone", secret)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	require.Contains(t, string(body), q.Name)

	req, err = http.NewRequest(http.MethodGet, url+"api/queues", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "a bearer token")
}
