package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// docs/benchmarks.md is regenerated from one run's output:
//
//	make bench                 # prints the BENCH lines and keeps them in .run/bench.out
//	make bench-doc             # go run ./internal/cmd/bench -doc docs/benchmarks.md -from .run/bench.out
//
// Every table row whose first cell names figures in backticks (`key`, or `a` / `b` for a cell of
// two) gets its value cell from the run, bold kept; rows naming a figure the run did not print
// are left alone and listed. Then the prose of every figures section (between
// "<!-- NAME figures: begin -->" and "<!-- NAME figures: end -->") is checked against the
// section's tables: a number the prose quotes that no table of its section holds is stale, and
// the command fails naming it, so the prose is rewritten from the same run (docpages_test.go runs
// the same check on the committed page).

// readFigures reads the BENCH key=value lines of a run (other lines are ignored).
func readFigures(r io.Reader) (map[string]string, error) {
	figs := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "BENCH ")
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			figs[k] = v
		}
	}
	return figs, sc.Err()
}

var (
	rowKeys      = regexp.MustCompile("^`([A-Za-z0-9_.]+)`(?: / `([A-Za-z0-9_.]+)`)*$")
	backtickKey  = regexp.MustCompile("`([A-Za-z0-9_.]+)`")
	sectionBegin = regexp.MustCompile(`^<!-- ([a-z0-9_-]+) figures: begin -->$`)
)

// formatFigure writes a printed value as the page does: numbers with thousands separators and
// without exponents, anything else (spreads, text) as printed.
func formatFigure(v string) string {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return v
	}
	s := v
	if strings.ContainsAny(v, "eE") {
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	whole = strings.TrimPrefix(whole, "-")
	if len(whole) > 3 {
		var b strings.Builder
		for i, c := range whole {
			if i > 0 && (len(whole)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		whole = b.String()
	}
	if neg {
		whole = "-" + whole
	}
	if frac != "" {
		return whole + "." + frac
	}
	return whole
}

// fillTables sets the value cell of every table row of doc that names figures of the run. It
// returns the new page and the figures named in rows the run did not print.
func fillTables(doc string, figs map[string]string) (string, []string) {
	lines := strings.Split(doc, "\n")
	var missing []string
	for i, line := range lines {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		first := strings.TrimSpace(cells[1])
		if !rowKeys.MatchString(first) || !strings.ContainsAny(first, "_.") {
			continue // not a figure (a benchmark's name, a file)
		}
		var values []string
		for _, m := range backtickKey.FindAllStringSubmatch(first, -1) {
			v, ok := figs[m[1]]
			if !ok {
				missing = append(missing, m[1])
				values = nil
				break
			}
			values = append(values, formatFigure(v))
		}
		if values == nil {
			continue
		}
		value := strings.Join(values, " / ")
		if old := strings.TrimSpace(cells[2]); strings.HasPrefix(old, "**") && strings.HasSuffix(old, "**") {
			value = "**" + value + "**"
		}
		cells[2] = " " + value + " "
		lines[i] = strings.Join(cells, "|")
	}
	return strings.Join(lines, "\n"), missing
}

// staleProse returns, for each figures section of doc, the numbers its prose quotes that none of
// its tables holds.
func staleProse(doc string) []string {
	var stale []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		m := sectionBegin.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		end := "<!-- " + m[1] + " figures: end -->"
		inTable := map[string]bool{}
		var prose []string
		for i++; i < len(lines) && lines[i] != end; i++ {
			if strings.HasPrefix(lines[i], "|") {
				for _, n := range proseNumbers(lines[i]) {
					inTable[n] = true
				}
			} else {
				prose = append(prose, lines[i])
			}
		}
		for _, n := range proseNumbers(strings.Join(prose, "\n")) {
			if !inTable[n] {
				stale = append(stale, m[1]+": "+n)
			}
		}
	}
	return stale
}

var numberToken = regexp.MustCompile(`^\d{1,3}(,\d{3})+(\.\d+)?$|^\d+(\.\d+)?$`)

// proseNumbers returns the numbers written in text: tokens that are a number once surrounding
// punctuation is trimmed ("15×", "(0.48)"), commas dropped. Digits inside words (arm64, md5) and
// dates are not numbers.
func proseNumbers(text string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '|' || r == '/' || r == '–' || r == '`' || r == '*'
	}) {
		tok = strings.Trim(tok, ".,;:()×≤≥%~")
		tok = strings.TrimSuffix(tok, "×")
		if numberToken.MatchString(tok) {
			out = append(out, strings.ReplaceAll(tok, ",", ""))
		}
	}
	return out
}

// writeDoc regenerates the page at path from the run in from.
func writeDoc(path, from string, log io.Writer) error {
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	figs, err := readFigures(f)
	f.Close()
	if err != nil {
		return err
	}
	if len(figs) == 0 {
		return fmt.Errorf("%s holds no BENCH lines", from)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, missing := fillTables(string(raw), figs)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return err
	}
	for _, k := range missing {
		fmt.Fprintf(log, "benchdoc: %s names %s, which the run did not print: row left as it was\n", path, k)
	}
	if stale := staleProse(doc); len(stale) > 0 {
		return fmt.Errorf("%s: the prose quotes numbers its section's tables do not hold (rewrite it from this run): %s",
			path, strings.Join(stale, "; "))
	}
	return nil
}
