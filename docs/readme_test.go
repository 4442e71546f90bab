package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// significant returns the trimmed lines of src that are neither blank nor comment-only, without
// their trailing comments.
func significant(src string) []string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if i := strings.Index(l, " // "); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// containsInOrder reports whether every line of want appears in have, in order.
func containsInOrder(have, want []string) bool {
	i := 0
	for _, l := range have {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestReadmeCodeCompiles checks that each Go block of the README and of the pages in docs/ is
// compiled code: its lines appear, in order, in one Go file of the repository (which `go vet` and
// the tests compile).
func TestReadmeCodeCompiles(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../README.md"}, pages...)
	var files [][]string
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "cdk.out" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		// The `jobkit init` templates count: its tests build what they write.
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".go.tmpl")) {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, significant(string(b)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlock.FindAllStringSubmatch(string(text), -1)
		if page == "../README.md" && len(blocks) == 0 {
			t.Fatal("README.md has no Go blocks")
		}
		for _, b := range blocks {
			want := significant(b[1])
			found := false
			for _, f := range files {
				if containsInOrder(f, want) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("a Go block of %s is not in any Go file of the repository:\n%s", page, b[1])
			}
		}
	}
}
