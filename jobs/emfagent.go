package jobs

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"
)

// agentWriter sends the runtime's EMF lines to a CloudWatch agent's EMF listener
// (contract.EnvMetricsEndpoint): one JSON object a line over TCP or UDP, each line given
// _aws.LogGroupName when logGroup is set, as AWS's embedded-metrics libraries send them. It is
// how a container's metrics reach CloudWatch: CloudWatch extracts EMF from Lambda's output, not
// from a container's log stream. Metrics are best effort: a line the agent does not take (not
// listening yet, restarting) is dropped after one reconnect, never holding a job back; drops are
// logged at most once a minute.
type agentWriter struct {
	network, addr string
	logGroup      []byte // `"LogGroupName":"<group>",` or nil
	log           *slog.Logger

	mu       sync.Mutex
	conn     net.Conn
	dropped  int
	lastWarn time.Time
}

// agentTimeout bounds a dial and a write to the agent.
const agentTimeout = time.Second

// newAgentWriter returns the writer for endpoint (tcp://host:port or udp://host:port).
func newAgentWriter(endpoint, logGroup string, log *slog.Logger) (*agentWriter, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "udp") || u.Host == "" || u.Port() == "" || u.Path != "" {
		return nil, fmt.Errorf("%q: want tcp://host:port or udp://host:port", endpoint)
	}
	w := &agentWriter{network: u.Scheme, addr: u.Host, log: log}
	if logGroup != "" {
		w.logGroup = appendJSONString([]byte(`"LogGroupName":`), logGroup)
		w.logGroup = append(w.logGroup, ',')
	}
	return w, nil
}

// emfPrefix opens every EMF line the runtime writes.
var emfPrefix = []byte(`{"_aws":{`)

func (w *agentWriter) Write(p []byte) (int, error) {
	line := p
	if w.logGroup != nil && bytes.HasPrefix(p, emfPrefix) {
		line = make([]byte, 0, len(p)+len(w.logGroup))
		line = append(append(append(line, emfPrefix...), w.logGroup...), p[len(emfPrefix):]...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	for range 2 {
		if w.conn == nil {
			if w.conn, err = net.DialTimeout(w.network, w.addr, agentTimeout); err != nil {
				w.conn = nil
				break
			}
		}
		_ = w.conn.SetWriteDeadline(time.Now().Add(agentTimeout))
		if _, err = w.conn.Write(line); err == nil {
			return len(p), nil
		}
		_ = w.conn.Close()
		w.conn = nil
	}
	w.dropped++
	if now := time.Now(); now.Sub(w.lastWarn) >= time.Minute {
		w.log.Warn("metrics: the CloudWatch agent did not take EMF lines; dropped", "endpoint", w.network+"://"+w.addr, "dropped", w.dropped, "error", err)
		w.lastWarn, w.dropped = now, 0
	}
	return len(p), err
}
