package docs

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/jobs/outbox"
	"github.com/jobkit-go/jobkit/jobs/ratelimit"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// TestDocumentedDefaults holds the pages and the code to the same defaults and limits: each row
// names a phrase a page says and the exported value that phrase describes. Change either alone
// and it fails; change both together and it passes.
func TestDocumentedDefaults(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		page, phrase string
		got, want    any
	}{
		{"handlers.md", "`JOBKIT_CONCURRENCY` messages (default 10)", contract.DefaultConcurrency, 10},
		{"handlers.md", "(`JOBKIT_DRAIN_TIMEOUT`, default 25 s)", contract.DefaultDrainTimeout, 25 * time.Second},
		{"handlers.md", "`JOBKIT_IDEMPOTENCY_EXPIRY`, else 1 hour", idempotency.DefaultExpiry, time.Hour},
		{"operations.md", "one hour where nothing sets it", idempotency.DefaultExpiry, time.Hour},
		{"handlers.md", "a token due within `MaxWait` (1 s)", ratelimit.DefaultMaxWait, time.Second},
		{"handlers.md", "its slowest recent answer, at most 0.5 s", ratelimit.MaxLead, 500 * time.Millisecond},
		{"handlers.md", "`email.send` to the mail provider's 1,000 a second", samplejobs.EmailRatePerSecond, 1000},
		{"handlers.md", "limiter `mail-provider`", samplejobs.LimiterMailProvider, "mail-provider"},
		{"state.md", "spread over 32 shards (`state.Options.Shards`, up to 1,000)", [2]int{state.DefaultShards, state.MaxShards}, [2]int{32, 1000}},
		{"operations.md", "until their `expiration` (7 days by default)", outbox.DefaultRetention, 7 * 24 * time.Hour},
		{"cli.md", "The manual move runs `--concurrency` workers (default 4)", inspect.DefaultRedriveConcurrency, 4},
		{"cli.md", "else `JobkitState`", contract.DefaultStack, "JobkitState"},
		{"cli.md", "stack `--stack` (default `JobkitState`)", contract.DefaultStack, "JobkitState"},
	} {
		t.Run(d.page+": "+d.phrase, func(t *testing.T) {
			b, err := os.ReadFile(d.page)
			if err != nil {
				t.Fatal(err)
			}
			if text := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(text, d.phrase) {
				t.Errorf("%s no longer says %q: update this row with the page", d.page, d.phrase)
			}
			if fmt.Sprint(d.got) != fmt.Sprint(d.want) {
				t.Errorf("%s says %q, but the code's value is %v: change the page or the code", d.page, d.phrase, d.got)
			}
		})
	}
}
