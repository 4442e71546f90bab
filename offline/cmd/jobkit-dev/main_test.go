package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobkit dev names the emulator it deploys onto, and refuses one it did not start at an endpoint
// nobody chose, unless told to reuse it.
func TestWhichEmulator(t *testing.T) {
	said, err := whichEmulator("moto", "http://127.0.0.1:4566", true, false, false)
	require.NoError(t, err)
	assert.Equal(t, "dev: started moto at http://127.0.0.1:4566 (stopped when this run ends)", said)

	_, err = whichEmulator("LocalStack", "http://127.0.0.1:4566", false, false, false)
	require.ErrorContains(t, err, "LocalStack already answers at http://127.0.0.1:4566, and this run did not start it")
	require.ErrorContains(t, err, "--reuse")

	for _, c := range []struct{ chosen, reuse bool }{{true, false}, {false, true}} {
		said, err = whichEmulator("moto", "http://127.0.0.1:5566", false, c.chosen, c.reuse)
		require.NoError(t, err)
		assert.Equal(t, "dev: using moto already running at http://127.0.0.1:5566 (left running when this run ends)", said)
	}
}

// emulatorKind tells LocalStack (its health route) from moto (its dashboard) from anything else.
func TestEmulatorKind(t *testing.T) {
	for route, want := range map[string]string{"/_localstack/health": "LocalStack", "/moto-api/": "moto", "/other": "an emulator"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != route {
				http.NotFound(w, r)
			}
		}))
		assert.Equal(t, want, emulatorKind(srv.URL), route)
		srv.Close()
	}
}
