package emulator

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Emulator is the offline emulator (moto, localstack/emulator.sh) a run uses: one it found
// answering, or one it started, which Stop stops.
type Emulator struct {
	Endpoint string
	// Started is set when Start started it (Stop then stops it).
	Started bool
	script  string
	env     []string
}

// Start makes sure an emulator answers at endpoint: if one does, it is reused; otherwise,
// when endpoint is a loopback address, <root>/localstack/emulator.sh starts moto on its port.
func Start(ctx context.Context, root, endpoint string) (*Emulator, error) {
	e := &Emulator{Endpoint: endpoint}
	if Answers(endpoint) {
		return e, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" || !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("emulator: nothing answers at %s, and it is not a local address this command could start the emulator on", endpoint)
	}
	e.script = filepath.Join(root, "localstack", "emulator.sh")
	e.env = append(os.Environ(), "JOBKIT_EMULATOR_PORT="+u.Port(), "AWS_ENDPOINT_URL="+endpoint)
	cmd := exec.CommandContext(ctx, e.script, "up")
	cmd.Env = e.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("emulator: start the emulator (%s up): %w: %s", e.script, err, strings.TrimSpace(stderr.String()))
	}
	e.Started = strings.TrimSpace(string(out)) == "started"
	return e, nil
}

// Stop stops the emulator if Start started it.
func (e *Emulator) Stop() error {
	if e == nil || !e.Started {
		return nil
	}
	cmd := exec.Command(e.script, "down")
	cmd.Env = e.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("emulator: stop the emulator: %w: %s", err, strings.TrimSpace(string(out)))
	}
	e.Started = false
	return nil
}

// Answers reports whether something accepts a TCP connection at endpoint's host and port (80 or
// 443 by its scheme when it names none) within 2 s.
func Answers(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme])
		if u.Scheme != "https" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
