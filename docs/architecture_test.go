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

// isLibrary reports whether folder rel is part of the library: jobs, idempotency, scheduler and
// their subpackages, and the leaf internal/awsarn.
func isLibrary(rel string) bool {
	return under(rel, "jobs") || under(rel, "idempotency") || under(rel, "scheduler") || rel == "internal/awsarn"
}

// importRule is one row of the map's "What may import what" table, applied by folder prefix so
// that a package added later falls under the rule of its folder.
type importRule struct {
	name    string            // the importers, as the map names them
	applies func(string) bool // whether the rule governs this importer
	allowed func(string) bool // whether the importer may import this folder of ours
	says    string            // what may be imported, for the failure message
}

// importRules mirrors docs/architecture.md. The first rule that applies to a package governs it.
var importRules = []importRule{
	{"the library", isLibrary, isLibrary, "the library only"},
	{"localstack", func(r string) bool { return under(r, "localstack") },
		func(r string) bool { return isLibrary(r) || under(r, "localstack") }, "the library and localstack"},
	{"functions", func(r string) bool { return under(r, "functions") },
		func(r string) bool { return isLibrary(r) || under(r, "functions") }, "the library and functions"},
	{"cmd/jobkit", func(r string) bool { return under(r, "cmd") }, isLibrary, "the library only"},
	{"internal", func(r string) bool { return under(r, "internal") },
		func(string) bool { return true }, "anything"},
	{"the sample CDK app (infra)", func(r string) bool { return r == "infra" },
		func(r string) bool { return isLibrary(r) || under(r, "infra") || under(r, "functions") },
		"the library, infra and functions"},
	{"infra's packages", func(r string) bool { return under(r, "infra") },
		func(r string) bool { return isLibrary(r) || under(r, "infra") }, "the library and infra"},
	{"docs", func(r string) bool { return under(r, "docs") }, isLibrary, "the library only"},
}

// ruleFor returns the rule governing folder rel, or nil if the map has none for it.
func ruleFor(rel string) *importRule {
	for i := range importRules {
		if importRules[i].applies(rel) {
			return &importRules[i]
		}
	}
	return nil
}

// importViolations returns one message per import of ours that p may not make.
func importViolations(p listedPackage) []string {
	rel, _ := ours(p.ImportPath)
	rule := ruleFor(rel)
	if rule == nil {
		return []string{p.ImportPath + ": no import rule covers folder " + rel +
			"; add it to the map and to \"What may import what\" in docs/architecture.md (and to importRules)"}
	}
	var out []string
	for _, imp := range p.Imports {
		dep, ok := ours(imp)
		if !ok || rule.allowed(dep) {
			continue
		}
		out = append(out, p.ImportPath+" imports "+imp+": "+rule.name+" may import "+rule.says+
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
	for _, dir := range []string{root, filepath.Join(root, "infra")} {
		for _, p := range goList(t, dir) {
			for _, msg := range importViolations(p) {
				t.Error(msg)
			}
		}
	}
}

// The ops CLI is what users install: it must link no emulator, tool or sample code, however
// indirectly (the import rules imply it; this says so in the failure).
func TestOpsCLILinksOnlyTheLibrary(t *testing.T) {
	root := repoRoot(t)
	found := false
	for _, p := range goList(t, root) {
		if p.ImportPath != rootModule+"/cmd/jobkit" {
			continue
		}
		found = true
		for _, dep := range p.Deps {
			if rel, ok := ours(dep); ok && !isLibrary(rel) {
				t.Errorf("cmd/jobkit links %s: `go list -deps ./cmd/jobkit` must show nothing of ours outside the library", dep)
			}
		}
	}
	if !found {
		t.Fatal("go list did not list cmd/jobkit")
	}
}

func TestImportRules(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"jobs", "jobs/internal/wire", true},
		{"scheduler", "internal/awsarn", true},
		{"internal/awsarn", "jobs", true},
		{"jobs/jobstest", "localstack/awstest", false},
		{"idempotency", "functions/samplejobs", false},
		{"scheduler", "internal/devapp", false},
		{"localstack/devstack", "localstack/esm", true},
		{"localstack/schedfire", "scheduler", true},
		{"localstack/deploy", "functions/samplejobs", false},
		{"localstack/devstack", "internal/sampleapp", false},
		{"functions/email", "functions/samplejobs", true},
		{"functions/samplejobs", "localstack/awstest", false},
		{"functions/samplejobs", "internal/sampleapp", false},
		{"cmd/jobkit", "jobs/inspect", true},
		{"cmd/jobkit", "localstack/emulator", false},
		{"cmd/jobkit", "functions/samplejobs", false},
		{"internal/devapp", "localstack/deploy", true},
		{"internal/cmd/bench", "functions/samplejobs", true},
		{"infra", "functions/samplejobs", true},
		{"infra/constructs", "functions/samplejobs", false},
		{"infra/constructs", "localstack/deploy", false},
		{"infra/constructs", "jobs", true},
		{"docs", "localstack/deploy", false},
	} {
		rule := ruleFor(c.from)
		if rule == nil {
			t.Errorf("no rule for %s", c.from)
			continue
		}
		if got := rule.allowed(c.to); got != c.ok {
			t.Errorf("%s (%s) importing %s: allowed=%v, want %v", c.from, rule.name, c.to, got, c.ok)
		}
	}
	if ruleFor("tools/x") != nil {
		t.Error("a folder the map does not know must have no rule")
	}
}

// mapFolder is the name a package folder goes by in the map: its first two path elements
// ("jobs/inspect", "localstack/deploy", "jobs/internal" for everything under it, "infra/internal"),
// or three under internal/ ("internal/cmd/dev"), where every program is named.
func mapFolder(rel string) string {
	parts := strings.Split(rel, "/")
	n := 2
	if parts[0] == "internal" {
		n = 3
	}
	return strings.Join(parts[:min(n, len(parts))], "/")
}

var backticked = regexp.MustCompile("`([^`]+)`")

// mapNames returns what the "## Map" section of architecture.md names in backticks, without
// trailing slashes.
func mapNames(t *testing.T, root string) map[string]bool {
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
	names := map[string]bool{}
	for _, m := range backticked.FindAllStringSubmatch(section, -1) {
		names[strings.TrimSuffix(m[1], "/")] = true
	}
	return names
}

func TestMapNamesEveryFolder(t *testing.T) {
	root := repoRoot(t)
	names := mapNames(t, root)
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
		if !names[folder] {
			t.Errorf("folder %s (%s) is not named in the map of docs/architecture.md: add a row for `%s/`", folder, example, folder)
		}
	}
}
