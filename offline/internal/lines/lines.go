// Package lines passes the output of the offline stack's local processes on in whole lines, so
// that concurrent processes writing to one terminal or log do not interleave within a line.
package lines

import (
	"bytes"
	"io"
	"sync"
)

// MaxLine is the longest line a Writer holds back waiting for its end; a longer one is passed on
// in pieces.
const MaxLine = 256 * 1024

// Writer passes whole lines to an io.Writer, each after a prefix. Writers that share an output
// share its mutex.
type Writer struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix []byte
	own    sync.Mutex
	buf    []byte
}

// NewWriter returns a Writer to w, each line after prefix; mu guards w for every Writer to it.
func NewWriter(mu *sync.Mutex, w io.Writer, prefix string) *Writer {
	return &Writer{mu: mu, w: w, prefix: []byte(prefix)}
}

// Write passes on the lines p completes, and holds back the rest.
func (l *Writer) Write(p []byte) (int, error) {
	l.own.Lock()
	defer l.own.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > MaxLine { // a line that never ends: pass it on in pieces
		l.buf = append(l.buf, '\n')
	}
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		l.emit(l.buf[:i+1])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// Flush passes on a last line that did not end, ended.
func (l *Writer) Flush() {
	l.own.Lock()
	defer l.own.Unlock()
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

// emit writes whole lines, each after the prefix, in one write.
func (l *Writer) emit(text []byte) {
	if len(l.prefix) > 0 {
		var b []byte
		for line := range bytes.Lines(text) {
			b = append(append(b, l.prefix...), line...)
		}
		text = b
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(text)
}
