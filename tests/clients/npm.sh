#!/usr/bin/env bash
# npm.sh: npm inside `pinhole run` installs a project's dependencies
# (phright, which depends on phleft) from an npm registry that requires a
# token pinhole injects: `npm install` (writes package-lock.json), then
# `npm ci` from that lock.  The user names only the registry, in the
# project's .npmrc.
# usage: npm.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/lib.sh"
cl_begin npm nginx curl openssl jq npm node
reg_port
make_npm || exit 1
start_registries || exit 1
cl_policy
reg_direct_ok npm npm.test phright "Bearer $TOK_NPM"
W=$T/work/app
mkdir -p "$W"
printf '{"name": "app", "version": "1.0.0", "private": true, "dependencies": {"phright": "^1.0.0"}}\n' \
	>"$W/package.json"
printf 'registry=https://npm.test:%s/\n' "$REG_PORT" >"$W/.npmrc"
home_snapshot before
# installed: both packages load and are the registry's.
installed() {
	[ "$(cd "$W" && node -p 'require("phright") + "/" + require("phleft")' 2>&1)" = \
		"hello from phright/hello from phleft" ]
}

cl_run -- npm install
run_ok "npm install"
check "npm install: phright and phleft load" installed
check "npm install: package-lock.json names the registry" \
	grep -q "\"resolved\": \"https://npm.test:$REG_PORT/phleft/-/phleft-1.0.0.tgz\"" "$W/package-lock.json"
check "npm install: the lock has sha512 integrity" grep -q '"integrity": "sha512-' "$W/package-lock.json"
audit_saw "npm install" npm.test '^/phright$' npm
audit_saw "npm install" npm.test '^/phleft/-/phleft-1\.0\.0\.tgz$' npm

cp "$W/package-lock.json" "$T/lock.after-install" 2>/dev/null
rm -rf "$W/node_modules"
cl_run -- npm ci
run_ok "npm ci"
check "npm ci: phright and phleft load" installed
check "npm ci: the lock is unchanged" cmp -s "$W/package-lock.json" "$T/lock.after-install"

audit_clean npm
home_unchanged before npm
ph_end
