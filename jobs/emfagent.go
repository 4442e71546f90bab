package jobs

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"
)

// agentWriter sends the runtime's EMF lines to a CloudWatch agent's EMF listener
// (contract.EnvMetricsEndpoint): one JSON object a line over TCP or UDP, each line given
// _aws.LogGroupName when logGroup is set, as AWS's embedded-metrics libraries send them. It is
// how a container's metrics reach CloudWatch: CloudWatch extracts EMF from Lambda's output, not
// from a container's log stream. Metrics are best effort and never hold a job back: Write only
// queues the line (up to agentQueue of them; a line that finds the queue full is dropped), and one
// goroutine sends them, reconnecting once per line when the agent is not there (not listening
// yet, restarting); drops are logged at most once a minute.
type agentWriter struct {
	network, addr string
	logGroup      []byte // `"LogGroupName":"<group>",` or nil
	log           *slog.Logger
	lines         chan []byte
	dropped       chan struct{} // a line dropped at Write: counted by the sender
}

// agentTimeout bounds a dial and a write to the agent; agentQueue is how many lines wait to be
// sent.
const (
	agentTimeout = time.Second
	agentQueue   = 1024
)

// newAgentWriter returns the writer for endpoint (tcp://host:port or udp://host:port) and starts
// its sender, which runs as long as the process.
func newAgentWriter(endpoint, logGroup string, log *slog.Logger) (*agentWriter, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "udp") || u.Host == "" || u.Port() == "" || u.Path != "" {
		return nil, fmt.Errorf("%q: want tcp://host:port or udp://host:port", endpoint)
	}
	w := &agentWriter{network: u.Scheme, addr: u.Host, log: log,
		lines: make(chan []byte, agentQueue), dropped: make(chan struct{}, agentQueue)}
	if logGroup != "" {
		w.logGroup = appendJSONString([]byte(`"LogGroupName":`), logGroup)
		w.logGroup = append(w.logGroup, ',')
	}
	go w.send()
	return w, nil
}

// emfPrefix opens every EMF line the runtime writes.
var emfPrefix = []byte(`{"_aws":{`)

// Write queues a copy of the line (with the log group spliced in) for the agent; it never blocks.
func (w *agentWriter) Write(p []byte) (int, error) {
	line := make([]byte, 0, len(p)+len(w.logGroup))
	if w.logGroup != nil && bytes.HasPrefix(p, emfPrefix) {
		line = append(append(append(line, emfPrefix...), w.logGroup...), p[len(emfPrefix):]...)
	} else {
		line = append(line, p...)
	}
	select {
	case w.lines <- line:
	default:
		select {
		case w.dropped <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// send writes the queued lines to the agent, one connection kept open.
func (w *agentWriter) send() {
	var (
		conn     net.Conn
		dropped  int
		lastWarn time.Time
		lastErr  error
	)
	for line := range w.lines {
		sent := false
		for range 2 {
			if conn == nil {
				c, err := net.DialTimeout(w.network, w.addr, agentTimeout)
				if err != nil {
					lastErr = err
					break
				}
				conn = c
			}
			_ = conn.SetWriteDeadline(time.Now().Add(agentTimeout))
			if _, err := conn.Write(line); err == nil {
				sent = true
				break
			} else {
				lastErr = err
			}
			_ = conn.Close()
			conn = nil
		}
		if !sent {
			dropped++
		}
	drain:
		for {
			select {
			case <-w.dropped:
				dropped++
			default:
				break drain
			}
		}
		if now := time.Now(); dropped > 0 && now.Sub(lastWarn) >= time.Minute {
			w.log.Warn("metrics: the CloudWatch agent did not take EMF lines; dropped", "endpoint", w.network+"://"+w.addr, "dropped", dropped, "error", fmt.Sprint(lastErr))
			lastWarn, dropped = now, 0
		}
	}
}
