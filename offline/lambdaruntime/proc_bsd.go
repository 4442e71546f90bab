//go:build unix && !linux

package lambdaruntime

import "syscall"

// procAttr puts the bootstrap in its own process group, so a timeout kills everything it started.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
