//go:build unix

package procgroup

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Kill sends SIGKILL to the process group led by pid.
func Kill(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// Gone reports whether pid no longer runs (what a test checks after the stack stops a process):
// absent, or, where /proc shows it (Linux), a zombie its parent has not reaped.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err) && procExists()
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// procExists reports whether this system has /proc (Linux does; the BSDs and macOS answer Gone
// from kill alone).
func procExists() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
