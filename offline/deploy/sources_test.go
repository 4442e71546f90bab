package deploy

import "testing"

func TestSourcesSubstituteThePackageBuilt(t *testing.T) {
	t.Parallel()
	o := &Options{Sources: map[string]string{"functions/email": "internal/fn/email"}}
	for src, want := range map[string]string{
		"functions/email":  "internal/fn/email",
		"functions/email/": "internal/fn/email",
		"functions/ledger": "functions/ledger",
	} {
		if got := o.sourceDir(src); got != want {
			t.Errorf("sourceDir(%q) = %q, want %q", src, got, want)
		}
	}
	if got := (&Options{}).sourceDir("functions/email"); got != "functions/email" {
		t.Errorf("no Sources: got %q", got)
	}
}
