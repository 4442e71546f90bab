package awstest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// builds holds the executables Build builds: one build per package folder per test binary.
var builds lambdaruntime.Builds

// Build returns the executable of the Go main package in dir (lambdaruntime.Builds.Path), built on
// the first call of the test binary; a failed build fails tb. Call Main from the package's
// TestMain so that the executables go when the tests end.
func Build(tb testing.TB, dir string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build on a busy 2-core machine takes minutes
	defer cancel()
	path, err := builds.Path(ctx, dir)
	if err != nil {
		tb.Fatalf("awstest: %v", err)
	}
	return path
}

// Main runs a package's tests, removes the executables Build built and exits with the tests'
// code: a package that builds executables calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	_ = builds.Remove()
	os.Exit(code)
}
