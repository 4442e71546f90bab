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

// agent stands in for the CloudWatch agent's EMF listener: it accepts TCP connections and hands
// on each line received.
type agent struct {
	ln    net.Listener
	lines chan string
	conns chan net.Conn
}

func startAgent(t *testing.T, addr string) *agent {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	a := &agent{ln: ln, lines: make(chan string, 100), conns: make(chan net.Conn, 10)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.conns <- c
			go func() {
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					a.lines <- sc.Text()
				}
			}()
		}
	}()
	t.Cleanup(a.stop)
	return a
}

// stop closes the listener and every connection it accepted, as an agent that exits.
func (a *agent) stop() {
	_ = a.ln.Close()
	for {
		select {
		case c := <-a.conns:
			_ = c.Close()
		default:
			return
		}
	}
}

func (a *agent) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case l := <-a.lines:
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &got), l)
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("the agent got no line")
		return nil
	}
}

// With JOBKIT_METRICS_ENDPOINT the EMF lines go to the agent, one a line, each given the log group
// (_aws.LogGroupName) the agent writes it to. When the agent restarts (its end of the connection
// closed, its listener gone a moment), the writer reconnects and later lines reach it; Write
// never fails or waits on the agent.
func TestMetricsToTheCloudWatchAgent(t *testing.T) {
	a := startAgent(t, "127.0.0.1:0")
	cfg, err := configFromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{
			"JOBKIT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "JOBKIT_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
			"JOBKIT_METRICS_ENDPOINT": "tcp://" + a.ln.Addr().String(), "JOBKIT_METRICS_LOG_GROUP": `/ecs/worker "logs"`,
		}[k]
		return v, ok
	})
	require.NoError(t, err)
	w, ok := cfg.Metrics.(*agentWriter)
	require.True(t, ok, "the metrics go to the agent")
	w.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	line := func(n int) []byte {
		return []byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]},"Queue":"q","JobsSucceeded":` + string(rune('0'+n)) + "}\n")
	}
	_, err = cfg.Metrics.Write(line(1))
	require.NoError(t, err)
	got := a.next(t)
	assert.Equal(t, `/ecs/worker "logs"`, got["_aws"].(map[string]any)["LogGroupName"])
	assert.Equal(t, float64(1), got["_aws"].(map[string]any)["Timestamp"])
	assert.Equal(t, float64(1), got["JobsSucceeded"])

	// The agent restarts on the same address: lines written meanwhile may be dropped (best
	// effort), and once it listens again the next lines arrive.
	addr := a.ln.Addr().String()
	a.stop()
	for n := range 3 {
		_, err := cfg.Metrics.Write(line(2 + n))
		require.NoError(t, err, "Write never fails")
	}
	b := startAgent(t, addr)
	require.Eventually(t, func() bool {
		_, _ = cfg.Metrics.Write(line(9))
		select {
		case l := <-b.lines:
			return l != ""
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}, 20*time.Second, 10*time.Millisecond, "the writer reconnects to the restarted agent")
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
