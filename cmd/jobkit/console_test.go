package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/localstack/awstest"
)

// `jobkit console` prints its URL and serves the page there until its context ends.
func TestConsolePrintsItsURLAndServes(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	dlq := awstest.CreateQueue(t, cfg, "dlq", nil)
	q := awstest.CreateQueue(t, cfg, "q", &awstest.QueueOptions{DLQ: &dlq})

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
