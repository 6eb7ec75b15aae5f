#!/usr/bin/env bash
# go.sh: the go command (Debian's golang-go) inside `pinhole run`
# downloads a project's module (example.test/greet v0.1.0) from a Go
# module proxy (GOPROXY protocol: @v/list, .info, .mod, .zip) that
# requires a token pinhole injects; then builds and runs.  The user's
# registry setup, and only that: GOPROXY names the proxy, GONOSUMDB
# exempts the private module from the public checksum database,
# GOFLAGS=-mod=mod lets go record the sums (handed over with --setenv: run
# clears the environment).
# usage: go.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/lib.sh"
cl_begin go nginx curl openssl jq go
echo "go: $(go version)"
reg_port
make_goproxy || exit 1
start_registries || exit 1
cl_policy
reg_direct_ok go goproxy.test example.test/greet/@v/list \
	"Basic $(printf 'gouser:%s' "$TOK_GO" | base64 -w0)"
W=$T/work/app
mkdir -p "$W"
printf 'module example.test/app\n\ngo 1.19\n\nrequire example.test/greet v0.1.0\n' >"$W/go.mod"
printf 'package main\n\nimport (\n\t"fmt"\n\n\t"example.test/greet"\n)\n\nfunc main() { fmt.Println(greet.Hello()) }\n' \
	>"$W/main.go"
# run clears the environment: the user hands these over with --setenv.
GOENV=(--setenv GOPROXY "https://goproxy.test:$REG_PORT"
	--setenv GONOSUMDB example.test --setenv GOFLAGS -mod=mod)
home_snapshot before

cl_run "${GOENV[@]}" -- go mod download -x
run_ok "go mod download"
audit_saw "go mod download" goproxy.test '^/example\.test/greet/@v/v0\.1\.0\.(mod|info)$' goproxy
audit_saw "go mod download" goproxy.test '^/example\.test/greet/@v/v0\.1\.0\.zip$' goproxy

cl_run "${GOENV[@]}" -- sh -c 'go build -o app . && ./app'
run_ok "go build"
expect "go build: the module's code runs" "$OUT" '^hello from greet$'
check "go build: go.sum records the module" grep -q '^example.test/greet v0.1.0 h1:' "$W/go.sum"

audit_clean go
home_unchanged before go
ph_end
