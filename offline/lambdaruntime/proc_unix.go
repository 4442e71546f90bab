//go:build unix

package lambdaruntime

import "syscall"

// killGroup sends SIGKILL to the process group led by pid, as Lambda kills an environment.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
