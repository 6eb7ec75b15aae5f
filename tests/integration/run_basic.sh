#!/usr/bin/env bash
# Scenario: `pinhole run` as a process: exit status (the command's, 128+N,
# 125, 126, 127), identity and capabilities inside (none, as root too),
# PID 1 and the PID namespace, orphans reaped, signals passed on, the
# sandbox gone with pinhole run, and the environment (kept names, options,
# proxy variables, environment secrets refused).
# usage: run_basic.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_basic
W=$T/work
mkdir -p "$W"

# --- exit status --------------------------------------------------------------
prun -- true
equal "true: status" "$RC" 0
prun -- sh -c 'exit 3'
equal "exit 3: status" "$RC" 3
prun -- sh -c 'kill -TERM $$'
equal "killed by TERM: status" "$RC" 143
prun -- no-such-command-here
equal "not found: status" "$RC" 127
expect "not found: one line" "$ERR" '^pinhole: no-such-command-here: No such file or directory$'
echo data >"$W/notexec.txt"
chmod 644 "$W/notexec.txt"
prun -- ./notexec.txt
equal "not executable: status" "$RC" 126
prun --no-such-option -- true
equal "unknown option: status" "$RC" 125
expect "unknown option: says so" "$ERR" 'unknown option --no-such-option'
prun
equal "no command: status" "$RC" 125
prun --bind "$T/missing" -- true
equal "bind of a missing path: status" "$RC" 125
expect "bind of a missing path: names it" "$ERR" "$T/missing: No such file"
"$PINHOLE" run --help >"$T/help" 2>&1
equal "--help: status" "$?" 0
check "--help: usage" file_has "$T/help" '^usage: pinhole run'

# --- identity, privilege ------------------------------------------------------
prun -- sh -c 'id -u; id -g; grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status'
equal "status of the identity run" "$RC" 0
equal "uid maps to itself" "$(sed -n 1p <<<"$OUT")" "$(id -u)"
equal "gid maps to itself" "$(sed -n 2p <<<"$OUT")" "$(id -g)"
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
	expect "$f is empty" "$OUT" "^$f:[[:space:]]+0000000000000000$"
done
expect "no_new_privs" "$OUT" '^NoNewPrivs:[[:space:]]+1$'
expect "seccomp filter on" "$OUT" '^Seccomp:[[:space:]]+2$'

# A descriptor pinhole inherits (here a directory outside the view) does
# not reach the command: only 0, 1 and 2 (and 3, ls's own) are open.
exec 7<"$T"
prun -- ls /proc/self/fd
exec 7<&-
equal "inherited descriptors closed" "$(echo $OUT)" "0 1 2 3"

# --- PID namespace ------------------------------------------------------------
prun -- sh -c 'echo $$; cat /proc/1/comm; ls /proc | grep -c "^[0-9][0-9]*$"'
equal "command is PID 2" "$(sed -n 1p <<<"$OUT")" 2
equal "PID 1 is pinhole's init" "$(sed -n 2p <<<"$OUT")" pinhole-init
n=$(sed -n 3p <<<"$OUT")
check "only the sandbox's processes are seen ($n)" test "${n:-99}" -le 4

# An orphan is reaped by PID 1: its /proc entry goes (a zombie's stays).
prun -- sh -c '
	(sh -c "echo \$\$ >orphan.pid" &)
	i=0; while [ ! -s orphan.pid ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
	p=$(cat orphan.pid); i=0
	while [ -e /proc/$p ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
	[ -e /proc/$p ] && echo "zombie $p" || echo reaped'
equal "orphan reaped by init" "$OUT" reaped

# --- signals ------------------------------------------------------------------
rm -f "$W/ready" "$W/term"
cat >"$W/trap.sh" <<'EOS'
trap 'echo term >term; exit 7' TERM
echo ready >ready
i=0
while [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
EOS
(cd "$W" && exec "$PINHOLE" run --log "$T/audit.jsonl" -- sh trap.sh) \
	>"$T/sig.out" 2>"$T/sig.err" </dev/null &
pid=$!
wait_for 10 test -s "$W/ready"
kill -TERM "$pid"
wait "$pid"
equal "TERM passed on: the command's status" "$?" 7
check "TERM passed on: the trap ran" test -s "$W/term"

# SIGKILL of pinhole run ends the sandbox: nothing of it stays.
marker=$((40000 + RANDOM))
(cd "$W" && exec "$PINHOLE" run --log "$T/audit.jsonl" -- sleep "$marker") \
	>/dev/null 2>&1 </dev/null &
pid=$!
running() { pgrep -f "^sleep $marker\$" >/dev/null; }
wait_for 10 running
check "sandboxed sleep started" running
kill -KILL "$pid"
{ wait "$pid"; } 2>/dev/null
gone() { ! running; }
wait_for 10 gone
check "sandbox ended with pinhole run" gone

# --- environment --------------------------------------------------------------
export PH_OUTSIDE=outside-value PH_KEPT=kept-value LC_TIME=C
prun --keep-env PH_KEPT --setenv PH_SET set-value --unsetenv LANG -- env
unset PH_OUTSIDE PH_KEPT LC_TIME
refuse "other variables are cleared" "$OUT" '^PH_OUTSIDE='
expect "--keep-env" "$OUT" '^PH_KEPT=kept-value$'
expect "--setenv" "$OUT" '^PH_SET=set-value$'
refuse "--unsetenv" "$OUT" '^LANG='
expect "LC_* kept" "$OUT" '^LC_TIME=C$'
expect "PATH kept" "$OUT" '^PATH='
for v in http_proxy https_proxy HTTP_PROXY HTTPS_PROXY; do
	expect "$v" "$OUT" "^$v=http://127\\.0\\.0\\.1:3128$"
done
expect "NO_PROXY" "$OUT" '^NO_PROXY=localhost,127\.0\.0\.1,::1$'
expect "JAVA_TOOL_OPTIONS: Java's proxy" "$OUT" \
	'^JAVA_TOOL_OPTIONS=-Dhttp\.proxyHost=127\.0\.0\.1 -Dhttp\.proxyPort=3128 -Dhttps\.proxyHost=127\.0\.0\.1 -Dhttps\.proxyPort=3128 -Dhttp\.nonProxyHosts=localhost\|127\.\*\|\[::1\]$'
prun --setenv JAVA_TOOL_OPTIONS '-Dhttps.proxyHost=mine -Xmx64m' -- env
expect "JAVA_TOOL_OPTIONS: the user's after pinhole's" "$OUT" \
	'^JAVA_TOOL_OPTIONS=-Dhttp\.proxyHost=127\.0\.0\.1 .* -Dhttps\.proxyHost=mine -Xmx64m$'
prun --setenv 'A=B' x -- true
equal "--setenv with a bad name: status" "$RC" 125
for opt in --bind --tmpfs --hide --setenv --unsetenv --keep-env -a -p --log; do
	prun "$opt" -- true
	equal "$opt without its argument: status" "$RC" 125
	expect "$opt without its argument: says so" "$ERR" "$opt needs"
done

# An environment secret never enters: not kept by default, refused by
# --keep-env.
cat >"$T/envsecret.conf" <<'EOC'
secret tok env PH_TEST_TOKEN
allow example.test:443 { inject bearer tok }
EOC
export PH_TEST_TOKEN=tok-$$-value
prun -p "$T/envsecret.conf" --keep-env PH_TEST_TOKEN -- true
equal "--keep-env of a secret: status" "$RC" 125
expect "--keep-env of a secret: says why" "$ERR" "holds secret 'tok'"
prun -p "$T/envsecret.conf" -- sh -c 'cat /proc/[0-9]*/environ | tr "\0" "\n"'
refuse "secret not in any environment inside" "$OUT" "tok-$$-value"
unset PH_TEST_TOKEN

ph_end
