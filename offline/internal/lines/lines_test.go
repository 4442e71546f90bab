package lines_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/internal/lines"
)

func TestWriterPassesWholeLines(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var out bytes.Buffer
	w := lines.NewWriter(&mu, &out, "[task] ")
	_, _ = w.Write([]byte("one\ntw"))
	require.Equal(t, "[task] one\n", out.String())
	_, _ = w.Write([]byte("o\nthree\nfour"))
	require.Equal(t, "[task] one\n[task] two\n[task] three\n", out.String())
	w.Flush()
	require.Equal(t, "[task] one\n[task] two\n[task] three\n[task] four\n", out.String())
	w.Flush()
	require.Equal(t, "[task] one\n[task] two\n[task] three\n[task] four\n", out.String())
}

func TestWriterPassesALineThatNeverEndsInPieces(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var out bytes.Buffer
	w := lines.NewWriter(&mu, &out, "")
	_, _ = w.Write([]byte(strings.Repeat("x", lines.MaxLine+1)))
	require.Equal(t, strings.Repeat("x", lines.MaxLine+1)+"\n", out.String())
}

// Two writers to one output, written to at once, never interleave within a line.
func TestWritersDoNotInterleave(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var out bytes.Buffer
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		w := lines.NewWriter(&mu, &out, "")
		wg.Go(func() {
			for range 200 {
				for _, c := range strings.Repeat(name, 50) + "\n" {
					_, _ = w.Write([]byte(string(c)))
				}
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, 400)
	for _, l := range got {
		require.Contains(t, []string{strings.Repeat("a", 50), strings.Repeat("b", 50)}, l)
	}
}
