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

// Gone reports whether pid no longer runs.
func Gone(pid int) bool {
	_, err := os.FindProcess(pid)
	return err != nil
}
