package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The module paths the map covers: the library module at the repository root and the CDK app's
// own module in infra/.
const (
	rootModule  = "github.com/jobkit-go/jobkit"
	infraModule = rootModule + "/infra"
)

// listedPackage is the part of `go list -json` this test reads. Imports and Deps leave out what
// only tests import, so test helpers may reach further than the code they test.
type listedPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// listed caches goList by directory: three tests read the same listing.
var listed = map[string][]listedPackage{}

// goList lists the non-test packages of the module in dir with their imports and dependencies.
func goList(t *testing.T, dir string) []listedPackage {
	t.Helper()
	if pkgs, ok := listed[dir]; ok {
		return pkgs
	}
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list in %s: %v", dir, err)
		}
		if p.Error != nil {
			t.Fatalf("go list in %s: package %s: %s", dir, p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list in %s found no package", dir)
	}
	listed[dir] = pkgs
	return pkgs
}

// ours returns an import path as a folder of the repository ("jobs/inspect", "infra/constructs"),
// and false for a path outside it.
func ours(importPath string) (string, bool) {
	if importPath == rootModule {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, rootModule+"/")
	return rel, ok
}

// under reports whether folder rel is root or inside it.
func under(rel, root string) bool {
	return rel == root || strings.HasPrefix(rel, root+"/")
}

// importRule is one row of the map's "What may import what" table: the folders it governs (each
// with everything below it) and the folders they may import.
type importRule struct {
	importers []string
	allowed   []string // "*" for anything
	says      string   // the row's second column, for failure messages
}

// governs returns how long the importer name that matches folder rel is (0: none).
func (r *importRule) governs(rel string) int {
	best := 0
	for _, f := range r.importers {
		if under(rel, f) && len(f) > best {
			best = len(f)
		}
	}
	return best
}

func (r *importRule) allows(rel string) bool {
	for _, f := range r.allowed {
		if f == "*" || under(rel, f) {
			return true
		}
	}
	return false
}

// importMap is what the map says about imports: its rules and the library's folders.
type importMap struct {
	rules   []importRule
	library []string
}

// ruleFor returns the rule governing folder rel (the longest importer match), or nil.
func (m *importMap) ruleFor(rel string) *importRule {
	var best *importRule
	bestLen := 0
	for i := range m.rules {
		if n := m.rules[i].governs(rel); n > bestLen {
			best, bestLen = &m.rules[i], n
		}
	}
	return best
}

func (m *importMap) isLibrary(rel string) bool {
	for _, f := range m.library {
		if under(rel, f) {
			return true
		}
	}
	return false
}

// mapSection returns the "## Map" section of docs/architecture.md.
func mapSection(t *testing.T, root string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Map\n")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Map\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}

// tableRows returns the cells of the rows of the first table after heading in section.
func tableRows(t *testing.T, section, heading string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(section, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/architecture.md: no %q under \"## Map\"", heading)
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		t.Fatalf("docs/architecture.md: the table under %q is empty", heading)
	}
	return rows[1:] // without the header
}

var backticked = regexp.MustCompile("`([^`]+)`")

// names returns the backticked names in a cell, without trailing slashes.
func names(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, strings.TrimSuffix(m[1], "/"))
	}
	return out
}

// readImportMap parses "What may import what": a row whose first column says "the library"
// names the library's folders; "the library" and "anything" in the second column stand for them
// and for every folder.
func readImportMap(t *testing.T, root string) *importMap {
	t.Helper()
	m := &importMap{}
	rows := tableRows(t, mapSection(t, root), "### What may import what")
	for _, row := range rows {
		if len(row) != 2 {
			t.Fatalf("docs/architecture.md, What may import what: row %q has %d columns, want 2", row, len(row))
		}
		if strings.Contains(row[0], "the library") {
			m.library = append(m.library, names(row[0])...)
		}
	}
	if len(m.library) == 0 {
		t.Fatal("docs/architecture.md, What may import what: no row names the library")
	}
	for _, row := range rows {
		r := importRule{importers: names(row[0]), allowed: names(row[1]), says: row[1]}
		if strings.Contains(row[1], "the library") {
			r.allowed = append(r.allowed, m.library...)
		}
		if strings.Contains(row[1], "anything") {
			r.allowed = append(r.allowed, "*")
		}
		if len(r.importers) == 0 || len(r.allowed) == 0 {
			t.Fatalf("docs/architecture.md, What may import what: row %q names no folder", row)
		}
		m.rules = append(m.rules, r)
	}
	return m
}

// importViolations returns one message per import of ours that p may not make.
func (m *importMap) importViolations(p listedPackage) []string {
	rel, _ := ours(p.ImportPath)
	rule := m.ruleFor(rel)
	if rule == nil {
		return []string{p.ImportPath + ": no row of \"What may import what\" in docs/architecture.md covers folder " + rel}
	}
	var out []string
	for _, imp := range p.Imports {
		dep, ok := ours(imp)
		if !ok || rule.allows(dep) {
			continue
		}
		out = append(out, p.ImportPath+" imports "+imp+": "+strings.Join(rule.importers, ", ")+" may import "+rule.says+
			" (docs/architecture.md, \"What may import what\")")
	}
	return out
}

// repoRoot is the repository root: the test runs in docs/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestImportsPointOneWay(t *testing.T) {
	root := repoRoot(t)
	m := readImportMap(t, root)
	for _, dir := range []string{root, filepath.Join(root, "infra")} {
		for _, p := range goList(t, dir) {
			for _, msg := range m.importViolations(p) {
				t.Error(msg)
			}
		}
	}
}

// The ops CLI is what users install: it must link no emulator, tool or sample code, however
// indirectly (the import rules imply it; this says so in the failure).
func TestOpsCLILinksOnlyTheLibrary(t *testing.T) {
	root := repoRoot(t)
	m := readImportMap(t, root)
	found := false
	for _, p := range goList(t, root) {
		if p.ImportPath != rootModule+"/cmd/jobkit" {
			continue
		}
		found = true
		for _, dep := range p.Deps {
			if rel, ok := ours(dep); ok && !m.isLibrary(rel) {
				t.Errorf("cmd/jobkit links %s: `go list -deps ./cmd/jobkit` must show nothing of ours outside the library", dep)
			}
		}
	}
	if !found {
		t.Fatal("go list did not list cmd/jobkit")
	}
}

// The parsed map says what the prose says, on known cases.
func TestImportRules(t *testing.T) {
	m := readImportMap(t, repoRoot(t))
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"jobs", "jobs/internal/wire", true},
		{"scheduler", "jobs/awsarn", true},
		{"cmd/jobkit", "jobs/awsarn", true},
		{"jobs/jobstest", "testkit/awstest", false},
		{"idempotency", "functions/samplejobs", false},
		{"scheduler", "internal/devapp", false},
		{"offline/devstack", "offline/esm", true},
		{"offline/schedfire", "scheduler", true},
		{"offline/deploy", "functions/samplejobs", false},
		{"offline/devstack", "functions/instrument", false},
		{"functions/email", "functions/samplejobs", true},
		{"functions/samplejobs", "testkit/awstest", false},
		{"functions/samplejobs", "functions/instrument", false},
		{"cmd/jobkit", "jobs/inspect", true},
		{"cmd/jobkit", "localstack/emulator", false},
		{"cmd/jobkit", "functions/samplejobs", false},
		{"internal/devapp", "offline/deploy", true},
		{"internal/cmd/bench", "functions/samplejobs", true},
		{"infra", "functions/samplejobs", true},
		{"infra/constructs", "functions/samplejobs", false},
		{"infra/constructs", "offline/deploy", false},
		{"infra/constructs", "jobs", true},
		{"docs", "offline/deploy", false},
	} {
		rule := m.ruleFor(c.from)
		if rule == nil {
			t.Errorf("no rule for %s", c.from)
			continue
		}
		if got := rule.allows(c.to); got != c.ok {
			t.Errorf("%s (%v) importing %s: allowed=%v, want %v", c.from, rule.importers, c.to, got, c.ok)
		}
	}
	if m.ruleFor("tools/x") != nil {
		t.Error("a folder the map does not know must have no rule")
	}
}

// mapFolder is the name a package folder goes by in the map: its first two path elements
// ("jobs/inspect", "offline/deploy", "jobs/internal" for everything under it, "infra/internal"),
// or three under internal/ ("internal/cmd/dev"), where every program is named.
func mapFolder(rel string) string {
	parts := strings.Split(rel, "/")
	n := 2
	if parts[0] == "internal" {
		n = 3
	}
	return strings.Join(parts[:min(n, len(parts))], "/")
}

// mapFolders returns the names in the first column of the map's "Folders" table.
func mapFolders(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, row := range tableRows(t, mapSection(t, root), "### Folders") {
		for _, n := range names(row[0]) {
			out[n] = true
		}
	}
	return out
}

// Every name in the first column of "Folders" exists: a row whose folder is gone fails.
func TestMapFoldersExist(t *testing.T) {
	root := repoRoot(t)
	for name := range mapFolders(t, root) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Errorf("docs/architecture.md names %s in its map, which does not exist: %v", name, err)
		}
	}
}

func TestMapNamesEveryFolder(t *testing.T) {
	root := repoRoot(t)
	named := mapFolders(t, root)
	folders := map[string]string{} // map folder -> a package in it
	for _, dir := range []string{root, filepath.Join(root, "infra")} {
		for _, p := range goList(t, dir) {
			rel, _ := ours(p.ImportPath)
			if rel == "" {
				continue
			}
			folders[mapFolder(rel)] = p.ImportPath
		}
	}
	// localstack/ also holds what is not Go (the emulator script, moto's fixes): every folder
	// there is part of the local AWS stack and is named too.
	entries, err := os.ReadDir(filepath.Join(root, "localstack"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "_") && e.Name() != "__pycache__" {
			folders["localstack/"+e.Name()] = "localstack/" + e.Name()
		}
	}
	for folder, example := range folders {
		if !named[folder] {
			t.Errorf("folder %s (%s) is not named in the map of docs/architecture.md: add a row for `%s/`", folder, example, folder)
		}
	}
}
