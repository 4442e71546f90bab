package tally

import "fmt"

// DefaultNamed is how many jobs a report names before "and N more".
const DefaultNamed = 10

// Lines names jobs one per line (Job.String), at most max of them (max <= 0: DefaultNamed), then
// "and N more" for the rest.
func Lines(jobs []Job, max int) []string {
	if max <= 0 {
		max = DefaultNamed
	}
	var out []string
	for i, j := range jobs {
		if i == max {
			out = append(out, fmt.Sprintf("and %d more", len(jobs)-max))
			break
		}
		out = append(out, j.String())
	}
	return out
}
