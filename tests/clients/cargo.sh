#!/usr/bin/env bash
# cargo.sh: cargo inside `pinhole run` fetches a project's dependency
# (phcrate 0.1.0) from a registry that requires a token pinhole injects,
# named in the project's .cargo/config.toml; then builds offline and runs.
# The newest cargo at hand is used: a cargo >= 1.68 (rustup's, when this
# user can run it) reads the sparse index on crates.test; Debian 12's
# cargo (1.65, no sparse support) reads the same index as a git
# repository on git.test.  Which one is said on the first line.
# usage: cargo.sh PATH-TO-PINHOLE
# cargo_minor BIN: the minor version of cargo BIN (0 when it cannot run).
cargo_minor() {
	"$1" --version 2>/dev/null | sed -n 's/^cargo 1\.\([0-9]*\)\..*/\1/p' | grep . ||
		echo 0
}
# The newest cargo this user can run, chosen before the scratch home
# replaces HOME (rustup's proxies read ~/.rustup): the toolchain's own
# binary, not the proxy, since the proxy would not work with that home.
CARGO=
for c in "$(rustup which cargo 2>/dev/null)" /usr/bin/cargo; do
	if [ -z "$c" ] || [ ! -x "$c" ]; then continue; fi
	if [ -z "$CARGO" ] || [ "$(cargo_minor "$c")" -gt "$(cargo_minor "$CARGO")" ]; then
		CARGO=$c
	fi
done
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/lib.sh"
cl_begin cargo nginx fcgiwrap git curl openssl jq
if [ -z "$CARGO" ] || [ "$(cargo_minor "$CARGO")" -eq 0 ]; then
	bad "no cargo that runs (rustup's or /usr/bin/cargo; scripts/deps-clients.sh installs Debian's)"
	ph_end
fi
# Its own rustc first.
PATH=$(dirname "$CARGO"):$PATH
MODE=git
[ "$(cargo_minor "$CARGO")" -ge 68 ] && MODE=sparse
echo "cargo: $("$CARGO" --version) at $CARGO: the $MODE index"

reg_port
make_cargo || exit 1
start_registries || exit 1
[ "$MODE" = sparse ] || start_git_server || exit 1
cl_policy
reg_direct_ok cargo crates.test index/ph/cr/phcrate "Bearer $TOK_CRATES"

W=$T/work/app
mkdir -p "$W/src" "$W/.cargo"
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2018"\n\n[dependencies]\nphcrate = { version = "0.1", registry = "ph" }\n' \
	>"$W/Cargo.toml"
printf 'fn main() {\n    println!("{}", phcrate::greeting());\n}\n' >"$W/src/main.rs"
if [ "$MODE" = sparse ]; then
	INDEX=sparse+https://crates.test:$REG_PORT/index/
else
	INDEX=https://git.test:$GIT_PORT/crates-index.git
fi
printf '[registries.ph]\nindex = "%s"\n' "$INDEX" >"$W/.cargo/config.toml"
home_snapshot before

cl_run -- "$CARGO" fetch
run_ok "cargo fetch"
check "cargo fetch: Cargo.lock names phcrate" grep -q '^name = "phcrate"' "$W/Cargo.lock"
if [ "$MODE" = sparse ]; then
	audit_saw "cargo fetch" crates.test '^/index/ph/cr/phcrate$' crates
else
	audit_saw "cargo fetch" git.test '^/crates-index\.git/' gh
fi
audit_saw "cargo fetch" crates.test '^/dl/phcrate/0\.1\.0/download$' crates

cl_run -- sh -c "'$CARGO' build --offline && ./target/debug/app"
run_ok "cargo build --offline"
expect "cargo build: the crate's code runs" "$OUT" '^hello from phcrate$'

audit_clean cargo
home_unchanged before cargo
ph_end
