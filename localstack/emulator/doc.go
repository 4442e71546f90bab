// Package emulator finds or starts the offline AWS emulator a local run uses: an endpoint that
// already answers is reused; a free loopback endpoint gets moto, started by
// localstack/emulator.sh, which Stop stops again.
package emulator
