//go:build linux

package taskrun

import "syscall"

// procAttr puts the process in its own process group (so a kill reaches what it started) and
// asks the kernel to kill it if this process dies first: no task outlives the offline stack.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid, as ECS kills a task.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
