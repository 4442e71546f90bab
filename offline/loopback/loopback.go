// Package loopback guards the local stack's own HTTP servers (the Lambda Runtime API, the fault
// proxy) as the emulator is guarded: they listen on 127.0.0.1, and a request that a browser marks
// as coming from a web page (Origin, Sec-Fetch-Site) or that names a host other than a loopback
// name (DNS rebinding) is refused with 403, so no page the developer visits can drive them.
package loopback

import (
	"net"
	"net/http"
	"strings"
)

// Guard returns next behind the check.
func Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := refuse(r); reason != "" {
			http.Error(w, "refused: "+reason, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse says why r is refused, or "".
func refuse(r *http.Request) string {
	if r.Header.Get("Origin") != "" {
		return "a request from a web page (Origin)"
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "none":
	default:
		return "a request from a web page (Sec-Fetch-Site)"
	}
	if !IsLoopbackHost(r.Host) {
		return "host " + r.Host + " is not a loopback name"
	}
	return ""
}

// IsLoopbackHost reports whether a Host header (with or without port) names the loopback
// interface: localhost or a loopback IP.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
