package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var figureKey = regexp.MustCompile("`([a-z][a-z0-9_.]*)`")

// TestBenchmarksFiguresSections checks every figures section of benchmarks.md: every figure its
// tables name is one the bench prints, and every number in its prose is one its tables hold.
func TestBenchmarksFiguresSections(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(docsDir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The figures sections sit between "<!-- NAME figures: begin -->" and "<!-- NAME figures:
	// end -->" (doc.go's sectionBegin): tables whose values `make bench-doc` writes from one run
	// of `make bench`, and prose that may quote only what its section's tables hold.
	text := string(doc)
	code := benchCode(t)
	lines := strings.Split(text, "\n")
	names := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		m := sectionBegin.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name := m[1]
		names[name] = true
		end := slices.Index(lines[i+1:], "<!-- "+name+" figures: end -->")
		if end < 0 {
			t.Errorf("benchmarks.md: the %s figures section has no end marker", name)
			continue
		}
		checkSection(t, name, strings.Join(lines[i+1:i+1+end], "\n"), code)
		i += end
	}
	for _, stale := range staleProse(text) {
		t.Errorf("benchmarks.md: a figures section's prose quotes a number its tables do not hold (%s)", stale)
	}
	for _, want := range []string{"run", "invocation", "e2e"} {
		if !names[want] {
			t.Errorf("benchmarks.md has no %s figures section", want)
		}
	}
}

// docsDir is the documentation, whose benchmark figures these tests hold to what the bench prints.
var docsDir = filepath.Join("..", "..", "..", "docs")

// benchCode is the source of the bench program, where every figure's key is written.
func benchCode(t *testing.T) string {
	sources, err := filepath.Glob("*.go")
	if err != nil || len(sources) == 0 {
		t.Fatalf("bench sources: %v", err)
	}
	var code strings.Builder
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(src)
	}
	return code.String()
}

// printed reports whether the bench's source writes key: whole, as a quoted string; as a prefix
// the code completes at run time (e2e_calls_per_job_<API>: the key's last part is not in the
// source); or as a prefix completed by one of the source's own quoted names
// (cost_added_usd_per_million_ + "list_jobs").
func printed(code, key string) bool {
	if strings.Contains(code, `"`+key+`"`) || strings.Contains(code, `"`+key[:strings.LastIndexByte(key, '_')+1]) {
		return true
	}
	for i := strings.IndexByte(key, '_'); i >= 0; i = nextUnderscore(key, i) {
		if strings.Contains(code, `"`+key[:i+1]+`"`) && strings.Contains(code, `"`+key[i+1:]+`"`) {
			return true
		}
	}
	return false
}

func nextUnderscore(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '_')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func checkSection(t *testing.T, name, section, code string) {
	keys := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		for _, m := range figureKey.FindAllStringSubmatch(cells[1], -1) {
			keys++
			if !printed(code, strings.TrimSuffix(m[1], "_spread")) {
				t.Errorf("benchmarks.md (%s) names %s, which internal/cmd/bench does not print", name, m[1])
			}
		}
	}
	if keys < 3 {
		t.Errorf("the %s figures section's tables name %d figures", name, keys)
	}
}

// benchKeyInProse is a figure's key as the other pages quote it: lower case with underscores,
// in backticks; `*` stands for any part of it (`ratelimit_*_per_job`).
var benchKeyInProse = regexp.MustCompile("`([a-z][a-z0-9*]*(?:_[a-z0-9*]+)+)`")

// TestPagesNameFiguresTheBenchPrints checks the other pages' claims about `make bench`: every key
// a paragraph that mentions `make bench` quotes is one the bench writes (as a quoted string in its
// source, a `*` matching any part of it).
func TestPagesNameFiguresTheBenchPrints(t *testing.T) {
	t.Parallel()
	code := benchCode(t)
	pages, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		if filepath.Base(page) == "benchmarks.md" {
			continue // its figures sections have their own test
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, para := range strings.Split(string(b), "\n\n") {
			if !strings.Contains(para, "make bench") {
				continue
			}
			for _, m := range benchKeyInProse.FindAllStringSubmatch(para, -1) {
				key := m[1]
				// A `*` stands for any part, the empty one included: a key the code completes at
				// run time ("scale_hottest_wcu_per_job_" + a variant's name).
				pattern := `"` + strings.ReplaceAll(regexp.QuoteMeta(key), `\*`, `[a-z0-9_]*`) + `"`
				if !regexp.MustCompile(pattern).MatchString(code) {
					t.Errorf("%s quotes `%s` as a figure of make bench, which internal/cmd/bench does not write", page, key)
				}
				checked++
			}
		}
	}
	if checked < 3 {
		t.Fatalf("found %d quoted figures beside `make bench` in the pages; expected the rate limit's and the CLI's", checked)
	}
}
