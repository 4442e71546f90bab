package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dev is documented and refuses a bad command line before it starts anything; the run itself is
// tested end to end in internal/devapp.
func TestDevCommandLine(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"--help"}, &out, &errOut)
	require.Equal(t, exitOK, code)
	for _, want := range []string{"Examples:", "jobkit dev --once", "DEV summary: succeeded=<n> retried=<n> dead=<n> lost=<n>"} {
		require.Contains(t, out.String(), want)
	}
	for _, args := range [][]string{{"extra"}, {"--progress", "fancy"}, {"--once=maybe"}} {
		var out, errOut strings.Builder
		code := run(context.Background(), append([]string{"--endpoint", "http://127.0.0.1:1"}, args...), &out, &errOut)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut.String())
	}
	// Not a local address: dev does not start an emulator there.
	errOut.Reset()
	code = run(context.Background(), []string{"--endpoint", "http://192.0.2.1:4566", "--once", "--function-logs", "-"}, &out, &errOut)
	require.Equal(t, exitError, code)
	require.Contains(t, errOut.String(), "not a local address")
}
