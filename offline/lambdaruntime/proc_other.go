//go:build !unix

package lambdaruntime

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the process itself; systems without process groups keep its children.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
