package lambdaruntime_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/lambdaruntime"
)

// Builds builds a package once however many tests ask for it at once, keeps a failure, and
// removes what it built.
func TestBuildsBuildOnce(t *testing.T) {
	t.Parallel()
	var b lambdaruntime.Builds
	ctx := context.Background()
	paths := make([]string, 4)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() {
			p, err := b.Path(ctx, "testdata/probe")
			assert.NoError(t, err)
			paths[i] = p
		})
	}
	wg.Wait()
	require.FileExists(t, paths[0])
	assert.Equal(t, "bootstrap", filepath.Base(paths[0]), "named as Lambda runs it")
	for _, p := range paths[1:] {
		assert.Equal(t, paths[0], p)
	}
	first, err := os.Stat(paths[0])
	require.NoError(t, err)
	again, err := b.Path(ctx, "./testdata/../testdata/probe")
	require.NoError(t, err)
	assert.Equal(t, paths[0], again, "the same package by another path")
	later, err := os.Stat(again)
	require.NoError(t, err)
	assert.Equal(t, first.ModTime(), later.ModTime(), "not built again")

	_, err = b.Path(ctx, "testdata/no-such-package")
	require.Error(t, err)
	_, err2 := b.Path(ctx, "testdata/no-such-package")
	assert.Equal(t, err, err2, "a failed build is kept, not retried")

	require.NoError(t, b.Remove())
	assert.NoFileExists(t, paths[0])
	require.NoError(t, b.Remove(), "twice is fine")
}
