//go:build unix && !linux

package procgroup

import "syscall"

// Attr puts a process in its own process group, so Kill reaches what it started.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
