#!/usr/bin/env bash
# Scenario: hostile `secret NAME exec` helpers (issue 9, item 19).
#  - pinhole run: a helper that prints, closes stdout and keeps running,
#    and one whose setsid grandchild keeps stdout open, end the run within
#    the deadline with a clear error and leave no process behind; SIGTERM
#    to pinhole during a slow helper leaves none either.
#  - The helper's environment: PATH, HOME, LANG and what the rule names
#    ("exec env VAR,..."), never an env secret's variable.
#  - pinhole proxy: a reload whose helper fails keeps the old policy and
#    says so; while a reload's helper is slow the proxy keeps serving, and
#    SIGTERM then stops it at once, the helper killed.
# Every helper writes its pid (or its grandchild's) to a marker file first;
# "left behind" is kill -0 on that pid after pinhole is done.
# usage: escape_secret_exec.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_secret_exec nginx openssl curl setsid

gen_certs || exit 1
start_nginx || exit 1

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
alive() { kill -0 "$1" 2>/dev/null; }
gone() { ! alive "$1"; }
# left_behind NAME MARKER: the pid in MARKER must be gone (bounded wait:
# a process SIGKILLed a moment ago may still be exiting).
left_behind() {
	local pid
	pid=$(cat "$2" 2>/dev/null)
	if [ -z "$pid" ]; then
		bad "$1: the helper wrote no marker $2"
		return
	fi
	if wait_for 2 gone "$pid"; then ok; else
		bad "$1: process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)) was left behind"
		kill -KILL "$pid" 2>/dev/null
	fi
}
# helper NAME BODY: an executable sh script $T/NAME.sh; @M@ in BODY is
# replaced by its marker path $T/NAME.pid.
helper() {
	printf '#!/bin/sh\n%s\n' "${2//@M@/$T/$1.pid}" >"$T/$1.sh"
	chmod 755 "$T/$1.sh"
	rm -f "$T/$1.pid"
}
# mark: the line that writes the shell's pid to the marker, atomically.
mark='echo $$ >@M@.t; mv @M@.t @M@'

# --- pinhole run -------------------------------------------------------------

# run_with HELPER: pinhole run -p a policy whose only secret is HELPER's
# output; sets RC, ERR, MS.
run_with() {
	cat >"$T/run.conf" <<-EOF
		secret tok exec $T/$1.sh
		allow web.test:$H_PORT { private; inject bearer tok }
	EOF
	local start
	start=$(date +%s%N)
	W=$T/work timeout 60 "$PINHOLE" run -p "$T/run.conf" -- true \
		>"$T/run.out" 2>"$T/run.err" </dev/null
	RC=$?
	MS=$(ms_since "$start")
	ERR=$(cat "$T/run.err")
}
mkdir -p "$T/work"
cd "$T/work" || exit 1

helper linger "echo tok-value
exec >&-
$mark
exec sleep 300"
run_with linger
equal "linger: pinhole run fails (125)" "$RC" 125
[ "$MS" -lt 10000 ] && ok || bad "linger: took $MS ms (deadline 10 s)"
expect "linger: says why" "$ERR" \
	'secret tok: helper .*/linger.sh closed its output but did not exit within 1000 ms; killed it'
left_behind "linger" "$T/linger.pid"

helper grandchild "setsid sh -c '$mark; exec sleep 300' &
while [ ! -s @M@ ]; do :; done
echo tok-value"
run_with grandchild
equal "grandchild: pinhole run fails (125)" "$RC" 125
[ "$MS" -lt 10000 ] && ok || bad "grandchild: took $MS ms (deadline 10 s)"
expect "grandchild: says why" "$ERR" \
	'secret tok: helper .*/grandchild.sh exited, but a process it started kept its output open'
left_behind "grandchild" "$T/grandchild.pid"

# A helper that never prints: SIGTERM to pinhole ends it, and the helper.
helper slow "$mark
exec sleep 300"
cat >"$T/run.conf" <<-EOF
	secret tok exec $T/slow.sh
	allow web.test:$H_PORT { private; inject bearer tok }
EOF
spawn slowrun "$PINHOLE" run -p "$T/run.conf" -- true
run_pid=$SPAWNED
if wait_for 10 file_has "$T/slow.pid" .; then ok; else bad "slow: the helper did not start"; fi
kill -TERM "$run_pid"
wait_exit "$run_pid" 5
[ "$EXIT_STATUS" != 255 ] && ok || bad "slow: pinhole run did not end at SIGTERM"
left_behind "slow, SIGTERM to pinhole run" "$T/slow.pid"

# --- the helper's environment ------------------------------------------------

helper envdump "/usr/bin/env >$T/helper.env
echo tok-value"
cat >"$T/env.conf" <<-EOF
	secret tok exec env PH_ALLOWED $T/envdump.sh
	secret es env PH_ENV_SECRET
	allow web.test:$H_PORT { private; inject bearer tok; inject header X-E es }
EOF
PH_ENV_SECRET=env-secret-value PH_ALLOWED=yes PH_OTHER=other LANG=C.UTF-8 \
	timeout 60 "$PINHOLE" check --secrets -p "$T/env.conf" \
	>"$T/check.out" 2>"$T/check.err"
equal "env: check --secrets passes" "$?" 0
envs=$(cat "$T/helper.env" 2>/dev/null)
refuse "env: no env secret's value" "$envs" 'env-secret-value'
refuse "env: no env secret's variable" "$envs" '^PH_ENV_SECRET='
refuse "env: nothing else of pinhole's environment" "$envs" '^PH_OTHER='
expect "env: the variable the rule names" "$envs" '^PH_ALLOWED=yes$'
expect "env: LANG" "$envs" '^LANG=C.UTF-8$'
expect "env: PATH" "$envs" '^PATH='
# Only these, and what sh adds itself (PWD, SHLVL, _).
extra=$(printf '%s\n' "$envs" | sed 's/=.*//' |
	grep -vxE 'PATH|HOME|LANG|PH_ALLOWED|PWD|OLDPWD|SHLVL|_' || true)
equal "env: no other variable" "$extra" ""
# A rule may not hand an env secret's variable to its helper.
cat >"$T/env2.conf" <<-EOF
	secret tok exec env PH_ENV_SECRET $T/envdump.sh
	secret es env PH_ENV_SECRET
	allow web.test:$H_PORT { private; inject bearer tok; inject header X-E es }
EOF
PH_ENV_SECRET=env-secret-value timeout 60 "$PINHOLE" check --secrets \
	-p "$T/env2.conf" >"$T/check.out" 2>"$T/check.err"
rc=$?
[ "$rc" -ne 0 ] && ok || bad "env: naming an env secret's variable is refused"
expect "env: says why" "$(cat "$T/check.err")" \
	'secret tok: the helper.s environment names PH_ENV_SECRET, which holds secret es'

# --- pinhole proxy: reload -----------------------------------------------------

pol=$T/proxy.conf
# write_policy HELPER ALLOWED-HOST
write_policy() {
	cat >"$pol.new" <<-EOF
		resolve web.test 127.0.0.1
		resolve other.test 127.0.0.1
		secret tok exec $T/$1.sh
		allow ok.test:443 { inject header X-Tok tok }
		allow $2:$H_PORT { private }
	EOF
	mv "$pol.new" "$pol"
}
code_for() {
	curl -q -sS --max-time "${2:-30}" -x "http://127.0.0.1:$PX_PORT" \
		-o /dev/null -w '%{http_code}' "http://$1:$H_PORT/index.html" 2>/dev/null
}
reloads() { test "$(count_in "$PX_ERR" "$2")" -ge "$1"; }
helper fast "echo tok-value"
helper failing "echo tok-value; exit 3"

write_policy fast web.test
start_proxy reload "$pol" || exit 1
equal "proxy: web.test allowed" "$(code_for web.test)" 200
equal "proxy: other.test refused" "$(code_for other.test)" 403

write_policy failing other.test
kill -HUP "$PX_PID"
wait_for 10 reloads 1 'the old policy stays'
expect "failing helper: says why" "$(cat "$PX_ERR")" 'secret tok: helper .*/failing.sh exited with status 3'
expect "failing helper: old policy stays (message)" "$(cat "$PX_ERR")" \
	"reload: the policy's secrets could not be loaded; the old policy stays"
equal "failing helper: web.test still" "$(code_for web.test)" 200
equal "failing helper: other.test still" "$(code_for other.test)" 403

write_policy linger other.test
start=$(date +%s%N)
kill -HUP "$PX_PID"
wait_for 15 reloads 2 'the old policy stays'
ms=$(ms_since "$start")
expect "lingering helper: says why" "$(cat "$PX_ERR")" 'linger.sh closed its output but did not exit'
[ "$ms" -lt 10000 ] && ok || bad "lingering helper: the reload took $ms ms"
equal "lingering helper: other.test still refused" "$(code_for other.test)" 403
left_behind "lingering helper, reload" "$T/linger.pid"

write_policy fast other.test
kill -HUP "$PX_PID"
wait_for 10 reloads 1 'reload: policy reloaded'
equal "good reload: other.test now" "$(code_for other.test)" 200

# A reload whose helper hangs: the proxy keeps serving meanwhile.
helper slow "$mark
exec sleep 300"
write_policy slow web.test
kill -HUP "$PX_PID"
if wait_for 10 file_has "$T/slow.pid" .; then ok; else bad "slow reload: the helper did not start"; fi
start=$(date +%s%N)
equal "slow reload pending: other.test still served" "$(code_for other.test 5)" 200
equal "slow reload pending: web.test still refused" "$(code_for web.test 5)" 403
ms=$(ms_since "$start")
[ "$ms" -lt 5000 ] && ok || bad "slow reload pending: two requests took $ms ms"
equal "slow reload pending: not swapped in" \
	"$(count_in "$PX_ERR" 'reload: policy reloaded')" 1
# SIGTERM now: acted on at once, the helper killed.
start=$(date +%s%N)
kill -TERM "$PX_PID"
wait_exit "$PX_PID" 5
ms=$(ms_since "$start")
equal "slow reload, SIGTERM: exit status" "$EXIT_STATUS" 0
[ "$ms" -lt 3000 ] && ok || bad "slow reload, SIGTERM: exit took $ms ms"
expect "slow reload, SIGTERM: says so" "$(cat "$PX_ERR")" 'reload: cancelled; stopping'
left_behind "slow reload, SIGTERM" "$T/slow.pid"
sanitizer_clean "reload" "$PX_ERR"

ph_end
