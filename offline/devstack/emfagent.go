package devstack

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// emfAgent stands in, offline, for the CloudWatch agent sidecar of a container worker: the
// container's JOBKIT_METRICS_ENDPOINT is pointed at a loopback TCP listener of the stack's, which
// writes each EMF line it receives to the stack's output under the container's name — where the
// agent would put it, in the task's log group — and counts them (Stack.EMFLines).
type emfAgent struct {
	ln    net.Listener
	lines atomic.Int64
	wg    sync.WaitGroup
}

// startEMFAgent listens on a free loopback port and writes what it receives to out as
// "[name] <line>", holding outMu for each line.
func startEMFAgent(name string, out io.Writer, outMu *sync.Mutex) (*emfAgent, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &emfAgent{ln: ln}
	a.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					a.lines.Add(1)
					outMu.Lock()
					_, _ = io.WriteString(out, "["+name+"] "+sc.Text()+"\n")
					outMu.Unlock()
				}
			}()
		}
	})
	return a, nil
}

// endpoint is the JOBKIT_METRICS_ENDPOINT the container is given.
func (a *emfAgent) endpoint() string { return "tcp://" + a.ln.Addr().String() }

// stop closes the listener and waits for the connections to end (the container has stopped).
func (a *emfAgent) stop() {
	_ = a.ln.Close()
	a.wg.Wait()
}
