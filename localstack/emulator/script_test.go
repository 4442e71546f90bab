package emulator

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// AWS_ENDPOINT_URL alone chooses the emulator's port: with nothing answering at a loopback URL,
// emulator.sh up starts moto on that URL's port (JOBKIT_EMULATOR_PORT unset), and down stops it.
func TestScriptStartsMotoOnTheEndpointsPort(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, ".venv", "bin", "python")); err != nil {
		require.NotEqual(t, "1", os.Getenv("JOBKIT_REQUIRE_EMULATOR"), "make test installs the venv (make setup)")
		t.Skip("no venv with moto: make setup")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	endpoint := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	runDir := t.TempDir() // the pid file that down reads
	script := func(verb string) string {
		cmd := exec.Command(filepath.Join(root, "localstack", "emulator.sh"), verb)
		cmd.Env = append(withoutVar(os.Environ(), "JOBKIT_EMULATOR_PORT"), "AWS_ENDPOINT_URL="+endpoint, "JOBKIT_RUN_DIR="+runDir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "emulator.sh %s: %s", verb, out)
		return strings.TrimSpace(string(out))
	}
	require.Equal(t, "started", script("up"))
	t.Cleanup(func() { script("down") })
	require.True(t, Answers(endpoint), "moto answers at %s", endpoint)
	require.Equal(t, "reused", script("up"))
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
