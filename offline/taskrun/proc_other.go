//go:build !linux

package taskrun

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
