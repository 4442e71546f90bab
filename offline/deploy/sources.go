package deploy

import "strings"

// sourceDir returns the Go package to build for a function whose SourceMetadataKey is source:
// Options.Sources' substitute when it names one, else source itself.
func (o *Options) sourceDir(source string) string {
	if sub, ok := o.Sources[strings.TrimSuffix(source, "/")]; ok {
		return sub
	}
	return source
}
