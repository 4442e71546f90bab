//go:build linux

package lambdaruntime

import "syscall"

// procAttr puts the bootstrap in its own process group (so a timeout kills everything it started)
// and asks the kernel to kill it if this process dies first, so no environment outlives its runtime.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
