#!/usr/bin/env bash
# Scenario: `pinhole run` failing before the command runs.  Each failure
# exits 125 with one line on stderr that says what and why, starting with
# "pinhole: ", no empty line, nothing added after it ("the policy's
# secrets could not be loaded", "the proxy ended before the command"); a
# policy with several errors says one line per error, as `check` does.
# Covers the secrets (a file missing, unreadable, open to others; a
# helper that fails; an environment variable unset; --keep-env of one;
# the engine killed while it loads),
# the policy (errors, a missing file, a file the sandbox could rewrite),
# the audit log (a bad path, a shared place), the trust files and bundles
# (a key in a trust file, a missing one, an unreadable CURL_CA_BUNDLE), a
# pinned CA that is not there, the home's caches (--cache a symbolic
# link, --cache with --no-cache), mounts (--tmpfs on a missing path under
# /, --bind of a missing path), PID 1's errors (--chdir), and bad option
# values (--limit-pids, --limit-memory, --log-limit, --dns, names).
# Works as root and as any other user.
# usage: cli_errors.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin cli_errors openssl
W=$T/work
mkdir -p "$W"

# one NAME LINES PATTERN ARGS...: `pinhole run ARGS... -- true` (prun)
# exits 125 with exactly LINES lines on stderr, each "pinhole: ...", none
# empty, and PATTERN (grep -E) in them; the command never ran.
one() {
	local name=$1 want=$2 pat=$3 n
	shift 3
	rm -f "$W/ran"
	prun "$@" -- sh -c ': >ran'
	equal "$name: status" "$RC" 125
	n=$(grep -c '' "$T/prun.err")
	equal "$name: stderr lines" "$n" "$want"
	if [ "$n" -ne "$want" ]; then printf '%s\n' "$ERR" | sed 's/^/  | /'; fi
	# Every line (an empty one too) must begin "pinhole: ".
	equal "$name: each line is pinhole's" \
		"$(grep -c '^pinhole: ' "$T/prun.err")" "$n"
	expect "$name: says why" "$ERR" "$pat"
	check "$name: the command did not run" test ! -e "$W/ran"
}

# A policy file out of the sandbox's reach (in $T, not the start dir).
pol() {
	local f=$T/$1.conf
	shift
	printf '%s\n' "$@" >"$f"
	chmod 644 "$f"
}

# --- secrets ------------------------------------------------------------------
pol missing "secret gh-token file $T/nosuch" \
	"allow example.org:443 { inject bearer gh-token }"
one "secret file missing" 1 \
	"^pinhole: secret gh-token: cannot open $T/nosuch: No such file" \
	-p "$T/missing.conf"
refuse "secret file missing: nothing added" "$ERR" 'could not be loaded'

echo token >"$T/tok-000"
chmod 000 "$T/tok-000"
pol unreadable "secret gh-token file $T/tok-000" \
	"allow example.org:443 { inject bearer gh-token }"
# As root the mode says it (0000), as anyone else the open does.
one "secret file unreadable" 1 "^pinhole: secret gh-token: .*tok-000" \
	-p "$T/unreadable.conf"

echo token >"$T/tok-644"
chmod 644 "$T/tok-644"
pol open "secret gh-token file $T/tok-644" \
	"allow example.org:443 { inject bearer gh-token }"
one "secret file open to others" 1 "tok-644 is mode 0644" -p "$T/open.conf"

pol helper "secret gh-token exec /bin/false" \
	"allow example.org:443 { inject bearer gh-token }"
one "secret helper fails" 1 \
	"^pinhole: secret gh-token: helper /bin/false exited with status 1" \
	-p "$T/helper.conf"

# The engine killed while it loads (a crash, the OOM killer): it said
# nothing, so the launcher does.  The helper's parent is proc.c's
# supervisor, whose parent is the engine (whose parent is the launcher).
cat >"$T/kill-engine.sh" <<'EOF'
#!/bin/sh
ppid_of() { sed 's/.*) . //' "/proc/$1/stat" | cut -d' ' -f1; }
engine=$(ppid_of "$PPID")
launcher=$(ppid_of "$engine")
[ "$(cat "/proc/$engine/comm")" = pinhole ] &&
	[ "$(cat "/proc/$launcher/comm")" = pinhole ] || exit 1
kill -KILL "$engine"
exit 1
EOF
chmod 755 "$T/kill-engine.sh"
pol killed "secret gh-token exec $T/kill-engine.sh" \
	"allow example.org:443 { inject bearer gh-token }"
one "the engine killed at start" 1 \
	"^pinhole: run: the engine ended at start \(signal 9" -p "$T/killed.conf"

pol envsec "secret npm-token env PH_TEST_NPM_TOKEN" \
	"allow example.org:443 { inject bearer npm-token }"
unset PH_TEST_NPM_TOKEN
one "secret variable unset" 1 "PH_TEST_NPM_TOKEN is not set" \
	-p "$T/envsec.conf"
export PH_TEST_NPM_TOKEN=not-a-real-token
one "--keep-env of a secret variable" 1 \
	"^pinhole: run: --keep-env PH_TEST_NPM_TOKEN: that variable holds secret" \
	-p "$T/envsec.conf" --keep-env PH_TEST_NPM_TOKEN
unset PH_TEST_NPM_TOKEN

# --- the policy ---------------------------------------------------------------
pol bad1 "allow"
one "policy error" 1 "^pinhole: $T/bad1\.conf:1:1: usage: allow" \
	-p "$T/bad1.conf"
pol bad2 "allow" "frobnicate x"
one "policy with two errors" 2 "bad2\.conf:2:1: unknown keyword" \
	-p "$T/bad2.conf"
one "policy file missing" 1 "nosuch\.conf: cannot open" -p "$T/nosuch.conf"
pol reach "allow example.org:443"
cp "$T/reach.conf" "$W/reach.conf"
one "policy the sandbox could rewrite" 1 \
	"^pinhole: run: policy file .*reach\.conf: .*lies in a directory" \
	-p "$W/reach.conf"
rm -f "$W/reach.conf"

# --- the audit log ------------------------------------------------------------
one "log in a missing directory" 1 \
	"^pinhole: run: audit log $T/nodir/a\.jsonl: No such file" \
	-a example.org:443 --log "$T/nodir/a.jsonl"
refuse "log in a missing directory: said once" "$ERR" 'audit log: audit log'
one "log on stderr" 1 "the audit log stderr is standard error" \
	-a example.org:443 --log stderr
one "log in the start directory" 1 "audit log .*lies in a directory" \
	-a example.org:443 --log "$W/a.jsonl"
one "--log-limit not a size" 1 "^pinhole: run: --log-limit x: " \
	-a example.org:443 --log-limit x

# --- trust, CA ----------------------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$T/k.pem" -out "$T/c.pem" -days 1 -subj /CN=t \
	>"$T/openssl.log" 2>&1 || cat "$T/openssl.log"
cat "$T/c.pem" "$T/k.pem" >"$T/with-key.pem"
chmod 644 "$T/c.pem" "$T/with-key.pem"
pol trustkey "trust $T/with-key.pem" "allow example.org:443"
one "a key in a trust file" 1 \
	"trust $T/with-key\.pem: holds a [A-Z ]*PRIVATE KEY block" \
	-p "$T/trustkey.conf"
pol trustmiss "trust $T/none.pem" "allow example.org:443"
one "a trust file missing" 1 "trust $T/none\.pem: No such file" \
	-p "$T/trustmiss.conf"
pol camiss "ca cert $T/none.pem key $T/none.key" \
	"allow example.org:443 { paths /x }"
one "a pinned CA missing" 1 "none\.(pem|key)" -p "$T/camiss.conf"

# The run CA is added to the user's bundle, which must be read for that.
pol intercept "allow example.org:443 { paths /x }"
# Root reads a file of mode 0000: a directory is what it cannot read.
cp "$T/c.pem" "$T/bundle-000.pem"
chmod 000 "$T/bundle-000.pem"
unreadable=$T/bundle-000.pem
[ "$(id -u)" -ne 0 ] || unreadable=$T/bundle-dir.pem
mkdir "$T/bundle-dir.pem"
one "CURL_CA_BUNDLE unreadable" 1 \
	"^pinhole: run: CURL_CA_BUNDLE=$unreadable: cannot read it" \
	-p "$T/intercept.conf" --setenv CURL_CA_BUNDLE "$unreadable"
one "CURL_CA_BUNDLE missing" 1 "CURL_CA_BUNDLE=$T/none\.pem: cannot read it" \
	-p "$T/intercept.conf" --setenv CURL_CA_BUNDLE "$T/none.pem"

# --- the home, mounts ---------------------------------------------------------
ln -s "$T/elsewhere" "$T/cache-link"
one "--cache a symbolic link" 1 "^pinhole: run: --cache $T/cache-link: " \
	-a example.org:443 --cache "$T/cache-link"
one "--cache and --no-cache" 1 "--cache and --no-cache: give one" \
	-a example.org:443 --cache "$T/cache" --no-cache
missing=/nonexistent-pinhole-test-$$
if [ -e "$missing" ]; then
	bad "$missing exists: cannot test --tmpfs on a missing path"
else
	one "--tmpfs on a missing path under /" 1 \
		"^pinhole: run: --tmpfs $missing: it does not exist.*; see pinhole doctor$" \
		-a example.org:443 --tmpfs "$missing"
fi
one "--tmpfs relative" 1 "the destination must be an absolute path" \
	-a example.org:443 --tmpfs relative
one "--bind of a missing path" 1 "$T/nothere: No such file" \
	-a example.org:443 --bind "$T/nothere"
one "--unix-socket missing" 1 "--unix-socket $T/nosock: No such file" \
	-a example.org:443 --unix-socket "$T/nosock"
# PID 1's error, through the launcher's protocol.
one "--chdir to a missing directory" 1 \
	"^pinhole: run: cannot change to /nonexistent-dir-$$: No such file.*; see pinhole doctor$" \
	-a example.org:443 --chdir "/nonexistent-dir-$$"

# --- option values ------------------------------------------------------------
one "--limit-pids not a number" 1 "^pinhole: run: --limit-pids: bad value 'x'" \
	--limit-pids x
one "--limit-memory not a size" 1 "--limit-memory: bad value 'x'" \
	--limit-memory x
one "--setenv bad name" 1 "--setenv: bad name 'a=b'" --setenv a=b c
one "--keep-env bad name" 1 "--keep-env: bad name 'a=b'" --keep-env a=b
keep=()
for i in $(seq 1 65); do keep+=(--keep-env "V$i"); done
one "--keep-env too often" 1 "at most 64 --keep-env" "${keep[@]}"
one "unknown option" 1 "unknown option --frobnicate" --frobnicate
one "missing argument" 1 "--policy needs an argument" --policy
# Checked before the sandbox starts: the proxy would end under the command.
one "--dns not a server list" 1 "^pinhole: run: DNS: bad DNS server list" \
	-a example.org:443 --dns 'not!a!server'
refuse "--dns: nothing added" "$ERR" 'proxy ended'

# No command at all (prun would add one).
(cd "$W" && "$PINHOLE" run --log "$T/audit.jsonl") >/dev/null 2>"$T/nocmd.err"
equal "no command: status" "$?" 125
equal "no command: one line" "$(grep -c '' "$T/nocmd.err")" 1
check "no command: pinhole's line" file_has "$T/nocmd.err" '^pinhole: run: no command'

ph_end
