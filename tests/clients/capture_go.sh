#!/usr/bin/env bash
# capture_go.sh: a Go program (Debian's golang-go) whose net/http client
# has a Transport of its own with no Proxy (&http.Transport{Proxy: nil}:
# it ignores every proxy variable) and resolves with Go's own resolver
# (/etc/resolv.conf, the DNS stub), inside `pinhole run`: captured
# (issue 12).  It reaches an allowed name over HTTPS (intercepted; Go
# trusts the run CA through SSL_CERT_FILE, as pinhole sets it) and plain
# HTTP; a denied name does not exist (a DNS "no such host"), an allowed
# name on a port no rule names is refused (ECONNREFUSED), both at once and
# in the audit log (capture_lib.sh's cap_four).  The program is built
# outside the sandbox, before the run.
# usage: capture_go.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
cap_begin capture_go nginx curl openssl jq go
echo "capture_go: $(go version)"
cap_web_policy
cap_urls
mkdir -p "$T/gosrc"
cat >"$T/gosrc/main.go" <<'EOF'
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

func classify(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "nxdomain"
	case errors.As(err, &dns) && dns.IsTemporary:
		return "eai_again"
	case errors.As(err, &dns):
		// "server misbehaving": the stub refused (before issue 12).
		return "dns:" + strings.ReplaceAll(dns.Err, " ", "_")
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ENETUNREACH):
		return "unreach"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return "other:" + strings.ReplaceAll(err.Error(), " ", "_")
}

func main() {
	// No Proxy: the environment's variables are ignored.
	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i, name := range []string{"https", "http", "denied", "port"} {
		t0 := time.Now()
		r, err := c.Get(os.Args[i+1])
		if err != nil {
			fmt.Printf("%s error=%s ms=%d\n", name, classify(err), time.Since(t0).Milliseconds())
			continue
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		fmt.Printf("%s status=%d body=%s\n", name, r.StatusCode, strings.TrimSpace(string(b)))
	}
}
EOF
(cd "$T/gosrc" && GOCACHE=$T/gocache GOPATH=$T/gopath GO111MODULE=off GOFLAGS='' \
	CGO_ENABLED=0 go build -o "$W/client" main.go) >"$T/gobuild.log" 2>&1 ||
	{ cat "$T/gobuild.log" && exit 1; }

cap_run ./client "${CAP_URLS[@]}"
show_out go
cap_four go
ph_end
