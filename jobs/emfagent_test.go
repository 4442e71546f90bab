package jobs

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentListener stands in for the CloudWatch agent's EMF listener: it accepts TCP connections
// and hands on each line received.
func agentListener(t *testing.T, addr string) (net.Listener, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	lines := make(chan string, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
		}
	}()
	return ln, lines
}

// With JOBKIT_METRICS_ENDPOINT the EMF lines go to the agent, one a line, each given the log group
// (_aws.LogGroupName) the agent writes it to; after the agent restarts, the writer reconnects;
// while it is down, lines are dropped, the job never held.
func TestMetricsToTheCloudWatchAgent(t *testing.T) {
	ln, lines := agentListener(t, "127.0.0.1:0")
	cfg, err := configFromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{
			"JOBKIT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "JOBKIT_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
			"JOBKIT_METRICS_ENDPOINT": "tcp://" + ln.Addr().String(), "JOBKIT_METRICS_LOG_GROUP": `/ecs/worker "logs"`,
		}[k]
		return v, ok
	})
	require.NoError(t, err)
	w, ok := cfg.Metrics.(*agentWriter)
	require.True(t, ok, "the metrics go to the agent")
	w.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	emf := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]},"Queue":"q","JobsSucceeded":1}` + "\n"
	_, err = cfg.Metrics.Write([]byte(emf))
	require.NoError(t, err)
	var got map[string]any
	select {
	case l := <-lines:
		require.NoError(t, json.Unmarshal([]byte(l), &got), l)
	case <-time.After(5 * time.Second):
		t.Fatal("the agent got no line")
	}
	assert.Equal(t, `/ecs/worker "logs"`, got["_aws"].(map[string]any)["LogGroupName"])
	assert.Equal(t, float64(1), got["_aws"].(map[string]any)["Timestamp"])
	assert.Equal(t, float64(1), got["JobsSucceeded"])

	// The agent goes away: the line is dropped after one reconnect.
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	w.mu.Lock()
	_ = w.conn.Close() // the agent's end of the connection closed too
	w.mu.Unlock()
	_, err = cfg.Metrics.Write([]byte(emf))
	assert.Error(t, err, "the line is dropped")

	// It comes back on the same address: the next line reaches it.
	_, lines = agentListener(t, addr)
	_, err = cfg.Metrics.Write([]byte(emf))
	require.NoError(t, err)
	select {
	case <-lines:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not reconnect")
	}
}

func TestMetricsEndpointRefused(t *testing.T) {
	for _, v := range []string{"127.0.0.1:25888", "http://127.0.0.1:25888", "tcp://127.0.0.1", "tcp://127.0.0.1:25888/x"} {
		_, err := configFromLookup(func(k string) (string, bool) {
			val, ok := map[string]string{"JOBKIT_QUEUE_URL": "q", "JOBKIT_DLQ_URL": "d", "JOBKIT_METRICS_ENDPOINT": v}[k]
			return val, ok
		})
		assert.ErrorContains(t, err, "JOBKIT_METRICS_ENDPOINT", v)
	}
}
