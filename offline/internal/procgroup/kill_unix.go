//go:build unix

package procgroup

import "syscall"

// Kill sends SIGKILL to the process group led by pid.
func Kill(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
