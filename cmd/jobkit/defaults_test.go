package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The console listens on 127.0.0.1:7700 unless --addr says otherwise (docs/console.md).
func TestConsoleDefaultAddress(t *testing.T) {
	t.Parallel()
	f := newConsoleCmd(&app{}).Flags().Lookup("addr")
	require.NotNil(t, f)
	require.Equal(t, "127.0.0.1:7700", f.DefValue)
}

// A file of jobs is checked whole before anything is sent, and its first 20 bad lines are
// reported (docs/cli.md).
func TestEnqueueFileReportsTheFirst20BadLines(t *testing.T) {
	t.Parallel()
	bad := strings.Repeat(`{"kind":""}`+"\n", 25)
	_, err := readJobs(strings.NewReader(`{"kind":"k"}`+"\n"+bad), func(string) bool { return false })
	require.Error(t, err)
	var lines []*LineError
	for _, e := range unwrapAll(err) {
		var le *LineError
		if errors.As(e, &le) {
			lines = append(lines, le)
		}
	}
	require.Len(t, lines, 20)
	require.Equal(t, 2, lines[0].Line, "line numbers count from 1")
	require.Equal(t, 21, lines[19].Line)
}

// unwrapAll returns the errors joined under err's wrapping.
func unwrapAll(err error) []error {
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			return j.Unwrap()
		}
		err = errors.Unwrap(err)
	}
	return nil
}
