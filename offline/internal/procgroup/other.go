//go:build !unix

package procgroup

import (
	"os"
	"syscall"
)

// Attr is nil: this system has no process groups.
func Attr() *syscall.SysProcAttr { return nil }

// Kill kills the process itself; its children are left.
func Kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// Gone reports whether pid no longer runs, as far as this system tells: a process that exited
// while something still holds its handle counts as running.
func Gone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	_ = p.Release()
	return false
}
