//go:build linux

package procgroup

import "syscall"

// Attr puts a process in its own process group (so Kill reaches what it started) and asks the
// kernel to kill it if this process dies first, so nothing outlives the offline stack.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
