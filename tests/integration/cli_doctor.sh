#!/usr/bin/env bash
# CLI tests of `pinhole doctor`: the table, --json, policy rows, exit codes.
# This machine has every kernel layer, as root and as an unprivileged
# user, so each must say yes.
# usage: cli_doctor.sh PATH-TO-PINHOLE   (PH_SRCDIR: source tree)
. "$(dirname "$0")/cli_lib.sh"

if ! command -v jq >/dev/null; then
	echo "cli_doctor: CANNOT RUN: jq is not installed (apt-get install jq)"
	exit 77
fi
features='userns apparmor namespaces network capture mounts landlock seccomp'

# --- usage ----------------------------------------------------------------
run doctor-help 0 "$PINHOLE" doctor --help && expect doctor-help "$out" '--json'
run doctor-badopt 2 "$PINHOLE" doctor --bogus
expect doctor-badopt "$err" 'usage: pinhole doctor'
run doctor-extra 2 "$PINHOLE" doctor extra
expect doctor-extra "$err" "unexpected argument 'extra'"
run doctor-nolog 2 "$PINHOLE" doctor --log

# --- the kernel layers --------------------------------------------------------
run doctor 0 "$PINHOLE" doctor
expect doctor "$out" "^kernel: Linux $(uname -r)\$"
expect doctor "$out" "^user: uid $(id -u) "
if [ "$(id -u)" = 0 ] && [ -w /sys/fs/cgroup/pids/cgroup.procs ]; then
	expect "doctor cgroup" "$out" '^cgroup: pids in v1 /sys/fs/cgroup/pids'
else
	expect "doctor cgroup" "$out" '^cgroup: .*(pids in v[12] /|no pids cgroup \()'
fi
expect doctor "$out" '^FEATURE +WORKS +DETAIL +WHAT TO DO$'
for f in $features; do
	expect "doctor $f" "$out" "^$f +yes +[^ ]"
done
expect doctor "$out" '^pinhole can run here; every layer works$'
refuse doctor "$out" '^(policy|secrets|log) '

run doctor-json 0 "$PINHOLE" doctor --json
if jq -e . >/dev/null <<<"$out"; then ok; else bad "doctor-json: not JSON"; fi
got=$(jq -r '[.[].feature] | join(" ")' <<<"$out")
[ "$got" = "$features" ] && ok || bad "doctor-json: features '$got'"
got=$(jq -r '[.[] | select(.status == "yes")] | length' <<<"$out")
[ "$got" = 8 ] && ok || bad "doctor-json: $got rows say yes, want 8"
got=$(jq -r '[.[] | keys | join(",")] | unique | join(" ")' <<<"$out")
[ "$got" = advice,detail,feature,status ] && ok ||
	bad "doctor-json: keys '$got'"

# --- a policy whose secret file is mode 0644 --------------------------------
value="s3cr3t-$$-doctor"
printf '%s\n' "$value" >"$tmp/token"
chmod 644 "$tmp/token"
cat >"$tmp/sec.conf" <<CONF
secret tok file token
allow api.test:443 { inject bearer tok }
CONF
run doctor-secret-mode 1 "$PINHOLE" doctor -p "$tmp/sec.conf"
expect doctor-secret-mode "$out" '^policy +yes +1 rule, 1 secret'
expect doctor-secret-mode "$out" '^secrets +no +secret tok: '
expect doctor-secret-mode "$out" '^log +yes +the default audit log'
expect doctor-secret-mode "$out" '^pinhole cannot run here; failing: secrets$'
refuse doctor-secret-mode "$out$err" "$value"
run doctor-secret-json 1 "$PINHOLE" doctor -p "$tmp/sec.conf" --json
got=$(jq -r '.[] | select(.feature == "secrets") | .status + ": " + .detail' \
	<<<"$out")
expect doctor-secret-json "$got" \
	'^no: secret tok: .*token is mode 0644; it must be 0600 or 0400'
refuse doctor-secret-json "$out$err" "$value"

chmod 600 "$tmp/token"
run doctor-secret-ok 0 "$PINHOLE" doctor -p "$tmp/sec.conf"
expect doctor-secret-ok "$out" '^secrets +yes +1 loaded: tok$'
refuse doctor-secret-ok "$out$err" "$value"

# --- a policy with errors; logs ----------------------------------------------
printf 'alow pypi.org\n' >"$tmp/bad.conf"
run doctor-badpolicy 1 "$PINHOLE" doctor -p "$tmp/bad.conf"
expect doctor-badpolicy "$err" "bad.conf:1:1: unknown keyword 'alow'"
expect doctor-badpolicy "$out" '^policy +no +1 error, 0 warnings'
expect doctor-badpolicy "$out" '^secrets +no +not tried: the policy has errors'

run doctor-log-missing 1 "$PINHOLE" doctor --log "$tmp/no/such/x.jsonl"
expect doctor-log-missing "$out" '^log +no +cannot create'
run doctor-log-ok 0 "$PINHOLE" doctor --log "$tmp/audit.jsonl"
expect doctor-log-ok "$out" '^log +yes '
[ ! -e "$tmp/audit.jsonl" ] && ok || bad "doctor-log-ok: created the log"

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
