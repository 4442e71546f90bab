package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatFigure(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"630": "630", "10813602": "10,813,602", "4809": "4,809", "0.3034": "0.3034",
		"1.426e+06": "1,426,000", "26.78": "26.78", "3.13–7.52": "3.13–7.52", "x y": "x y", "-1234.5": "-1,234.5",
	} {
		require.Equal(t, want, formatFigure(in), in)
	}
}

const docPage = "# B\n\n" +
	"<!-- x figures: begin -->\n" +
	"| figure | value | target |\n| --- | --- | --- |\n" +
	"| `a_ns` | 1,000 | |\n" +
	"| `a_ratio` | **2.5** | ≥ 3 |\n" +
	"| `b_cpu` / `c_cpu` | 1 / 2 | |\n" +
	"| `gone_ms` | 7 | |\n" +
	"\nProse: a ratio of 2.5 and 1,000 ns.\n" +
	"<!-- x figures: end -->\n"

// The tables take the run's values, bold kept; rows of figures the run lacks stay; prose quoting
// a number the new tables do not hold fails the regeneration.
func TestWriteDoc(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page, out := filepath.Join(dir, "b.md"), filepath.Join(dir, "bench.out")
	require.NoError(t, os.WriteFile(page, []byte(docPage), 0o644))
	run := "noise\nBENCH a_ns=1000\nBENCH a_ratio=2.5\nBENCH b_cpu=12345\nBENCH c_cpu=3\n"
	require.NoError(t, os.WriteFile(out, []byte(run), 0o644))
	var log strings.Builder
	require.NoError(t, writeDoc(page, out, &log))
	got, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(got), "| `a_ratio` | **2.5** | ≥ 3 |")
	require.Contains(t, string(got), "| `b_cpu` / `c_cpu` | 12,345 / 3 | |")
	require.Contains(t, string(got), "| `gone_ms` | 7 | |")
	require.Contains(t, log.String(), "gone_ms")

	require.NoError(t, os.WriteFile(out, []byte("BENCH a_ns=900\nBENCH a_ratio=2.7\n"), 0o644))
	err = writeDoc(page, out, &log)
	require.ErrorContains(t, err, "x: 2.5")
	require.ErrorContains(t, err, "x: 1000")
}
