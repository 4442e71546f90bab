package taskrun_test

import "os"

// filepathTemp makes a directory for the test binary's build, removed with the test binary's
// other temporary files by the OS.
func filepathTemp() (string, error) { return os.MkdirTemp("", "taskrun-test-") }
