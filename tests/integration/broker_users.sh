#!/usr/bin/env bash
# Scenario: the broker under its own account holds a Git token for two
# users who cannot read it.  As root: `pinhole proxy --broker` runs as
# uid 4243 (no passwd entry: the grants name uids) with the token in a
# 0600 file of its own in a 0700 directory; its configuration grants
# policy `git` (which injects the token for a Git server on loopback) to
# uids 4241 and 4242 and policy `other` to 4241 only.  Both users run a
# sandbox through the broker at the same time (each waits inside until
# both are up, clones and pushes with the injected token, asks for a
# denied host): both clones and pushes succeed, the denied host fails and the summary says so.
# Neither user can read the token outside (cat as that uid) or inside (a
# sandboxed cat of its path; the environments and /proc of the sandbox
# are copied out and searched), nor find it in anything pinhole wrote for
# them (their log copy, stdout, stderr, work directory).  4242 asking for
# `other` is refused with the reason and exit 125, and the central log
# has the deny record with client_uid 4242; 4241 gets `other`.  Every
# central record carries client_uid, client_pid, client_cmd; each user's
# log copy holds only its own sandbox's records.
# As any other user (scripts/unprivileged.sh: 65534) distinct users
# cannot be made: the broker and the client run as that user, the same
# flow is checked, and the checks that need two users are counted as
# skipped, with why.
# usage: broker_users.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
. "$(dirname "$0")/broker_lib.sh"
ph_begin broker_users nginx fcgiwrap git curl openssl jq setpriv timeout
gen_certs >/dev/null || exit 1
start_git_server || exit 1
chmod 644 "$T/ca.pem"
bk_setup
U1=${BK_USERS[0]}
U2=${BK_USERS[1]:-}
bk_secret git-token "$GIT_TOKEN"
TOKEN_PATH=$BK/secret/git-token
equal "the token file: 0600, the broker's" "$(stat -c '%a %u' "$TOKEN_PATH")" "600 $BK_UID"
equal "its directory: 0700, the broker's" "$(stat -c '%a %u' "$BK/secret")" "700 $BK_UID"

# The configuration and the policies: the broker's or root's, 0644.
cat >"$T/conf/git.conf" <<EOC
secret gh file $TOKEN_PATH
resolve git.test 127.0.0.1
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem
	paths /allowed.git/* inject basic x-access-token gh }
EOC
cat >"$T/conf/other.conf" <<EOC
resolve git.test 127.0.0.1
allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem paths /echo-auth }
EOC
cat >"$T/conf/broker.conf" <<EOC
broker {
	policy git git.conf
	users $U1 ${U2:-}
}
broker {
	policy other other.conf
	users 4241
}
EOC
chmod 644 "$T/conf"/*.conf
start_broker broker "$T/conf/broker.conf" || exit 1

URL=https://git.test:$GIT_PORT
GITENV=(--setenv GIT_CONFIG_NOSYSTEM 1 --setenv GIT_TERMINAL_PROMPT 0)
G="git -c user.name=t -c user.email=t@t"
# The sandbox's program: says it is up, waits (bounded) until the test
# lets it go, so that the users' sandboxes are up at once; clones, asks
# for a denied host, copies what the sandbox can see out, tries the
# token's path, says it is done and waits to be let go again.
inside() {
	cat <<EOF
w() { i=0; while [ ! -e \$1 ] && [ \$i -lt 3000 ]; do sleep 0.02; i=\$((i + 1)); done; }
touch started; w go
$G clone -q $URL/allowed.git && echo cloned
(cd allowed && echo "\$PUSH_BRANCH" >pushed && $G add pushed &&
	$G commit -q -m "\$PUSH_BRANCH" &&
	$G push -q origin HEAD:refs/heads/\$PUSH_BRANCH) && echo pushed
curl -sS --max-time 20 https://denied.test:$GIT_PORT/ >/dev/null 2>&1 || echo denied-failed
cat /proc/[0-9]*/environ >dump-environ 2>/dev/null
cat /proc/[0-9]*/cmdline >dump-cmdline 2>/dev/null
env >dump-env
cat $TOKEN_PATH >dump-token 2>/dev/null && echo token-read
touch finished; w end
EOF
}
inside >"$T/inside.sh"
chmod 644 "$T/inside.sh"

# --- two users at once --------------------------------------------------------
declare -A RPID
for u in "${BK_USERS[@]}"; do
	cp "$T/inside.sh" "$T/u$u/work/inside.sh"
	[ -z "$BK_ROOT" ] || chown "$u:$u" "$T/u$u/work/inside.sh"
	brun_bg "run$u" "$u" "$T/u$u/work" -p git "${GITENV[@]}" \
		--setenv HOME "$T/u$u/work" --setenv PUSH_BRANCH "from-$u" \
		-- sh inside.sh
	RPID[$u]=$SPAWNED
done
all_there() {
	local u
	for u in "${BK_USERS[@]}"; do [ -e "$T/u$u/work/$1" ] || return 1; done
}
check "every sandbox is up at once" wait_for 60 all_there started
for u in "${BK_USERS[@]}"; do touch "$T/u$u/work/go"; done
check "every sandbox cloned and looked around" wait_for 90 all_there finished
check "the sandboxes are still up together" all_there started
for u in "${BK_USERS[@]}"; do touch "$T/u$u/work/end"; done
for u in "${BK_USERS[@]}"; do
	pid=${RPID[$u]}
	wait_exit "$pid" 60
	out=$(cat "$T/run$u.out")
	err=$(cat "$T/run$u.err")
	equal "uid $u: run status" "$EXIT_STATUS" 0
	expect "uid $u: git clone with the injected token" "$out" '^cloned$'
	check "uid $u: the clone has the repository" test -s "$T/u$u/work/allowed/README"
	expect "uid $u: git push with the injected token" "$out" '^pushed$'
	equal "uid $u: the push reached the server" \
		"$(git --git-dir="$T/git/allowed.git" log -1 --format=%s "from-$u" 2>/dev/null)" \
		"from-$u"
	expect "uid $u: the denied host fails" "$out" '^denied-failed$'
	expect "uid $u: the summary names the denied host" "$err" \
		"^pinhole: [0-9]+ denied: denied\\.test:$GIT_PORT \\(x[0-9]+\\); see "
	refuse "uid $u: the token's path cannot be read inside" "$out" '^token-read$'
	check "uid $u: the environments were copied out" test -s "$T/u$u/work/dump-environ"
	if grep -r -q -a -- "$GIT_TOKEN" "$T/u$u" "$T/run$u.out" "$T/run$u.err"; then
		bad "uid $u: the token is in what the user can read:" \
			"$(grep -r -l -a -- "$GIT_TOKEN" "$T/u$u" "$T/run$u.out" "$T/run$u.err")"
	else ok; fi
	check "uid $u: its log copy was written" test -s "$T/u$u/run$u.jsonl"
	check "uid $u: its log copy has its clone" \
		jq_has 'select(.event == "request" and .host == "git.test" and .decision == "allow")' \
		"$T/u$u/run$u.jsonl"
	check "uid $u: its log copy holds only its records" \
		jq_none "select(.client_uid != $u)" "$T/u$u/run$u.jsonl"
	check "uid $u: central records with its pid and command" \
		jq_has "select(.client_uid == $u and .client_pid == $pid and .client_cmd == \"sh\")" \
		"$BK_LOG"
done
check "the central log has the injected token by name" \
	jq_has 'select(.secret == "gh")' "$BK_LOG"
check "every central record carries client_uid, client_pid, client_cmd" \
	jq_none 'select((.client_uid | type) != "number" or (.client_pid | type) != "number" or (.client_cmd | type) != "string")' \
	"$BK_LOG"
if grep -q -a -- "$GIT_TOKEN" "$BK_LOG"; then
	bad "the token's value is in the central log"
else ok; fi
if [ -n "$U2" ]; then
	s1=$(jq -r .sandbox "$T/u$U1/run$U1.jsonl" | sort -u)
	s2=$(jq -r .sandbox "$T/u$U2/run$U2.jsonl" | sort -u)
	equal "the copies name one sandbox each" "$(wc -l <<<"$s1") $(wc -l <<<"$s2")" "1 1"
	check "the copies name different sandboxes" test "$s1" != "$s2"
	check "the copies hold their sandbox's every central record" \
		test "$(jq -c "select(.sandbox == \"$s1\")" "$BK_LOG" | wc -l)" -eq \
		"$(wc -l <"$T/u$U1/run$U1.jsonl")"
else
	bk_skip 3 "the copies of two users' sandboxes: not root, one uid only"
fi

# --- the token outside ---------------------------------------------------------
if [ -n "$BK_ROOT" ]; then
	for u in "${BK_USERS[@]}"; do
		check "uid $u cannot read the token file" \
			sh -c "! setpriv --reuid=$u --regid=$u --clear-groups cat '$TOKEN_PATH' >/dev/null 2>&1"
		check "uid $u cannot list the broker's secrets" \
			sh -c "! setpriv --reuid=$u --regid=$u --clear-groups ls '$BK/secret' >/dev/null 2>&1"
		check "uid $u cannot read the broker's environment" \
			sh -c "! setpriv --reuid=$u --regid=$u --clear-groups cat /proc/$BK_PID/environ >/dev/null 2>&1"
		check "uid $u cannot read the central log" \
			sh -c "! setpriv --reuid=$u --regid=$u --clear-groups cat '$BK_LOG' >/dev/null 2>&1"
	done
else
	bk_skip 8 "the token and the central log unreadable by the users: not root, the broker is the user"
fi

# --- policies not granted --------------------------------------------------------
# `other` is granted to uid 4241 only: not to 4242 (as root), nor to the
# one user (otherwise).
NOT=${U2:-$U1}
brun "$NOT" "$T/u$NOT/work" -p other -- true
equal "uid $NOT, policy other: refused, 125" "$RC" 125
expect "uid $NOT, policy other: the reason" "$ERR" \
	"^pinhole: run: broker $BK_SOCK: policy other is not granted to uid $NOT"
check "uid $NOT, policy other: the central deny record" \
	jq_has "select(.event == \"client\" and .client_uid == $NOT and .decision == \"deny\" and .policy == \"other\" and (.reason | test(\"not granted\")))" \
	"$BK_LOG"
if [ -n "$BK_ROOT" ]; then
	brun "$U1" "$T/u$U1/work" -p other -- true
	equal "uid $U1, policy other: granted" "$RC" 0
	[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/  | /'
else
	bk_skip 1 "policy other granted to uid 4241: not root, that uid cannot be taken"
fi
brun "$U1" "$T/u$U1/work" -p nosuch -- true
equal "uid $U1, an unknown policy: refused, 125" "$RC" 125
expect "uid $U1, an unknown policy: named" "$ERR" "^pinhole: run: broker $BK_SOCK: .*nosuch"

check "the broker is still up" alive "$BK_PID"
stop_proxy broker "$BK_PID" "$BK_ERR"
bk_end
