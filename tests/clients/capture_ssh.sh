#!/usr/bin/env bash
# capture_ssh.sh: ssh and `git clone ssh://` inside `pinhole run` to a
# local OpenSSH server (capture_lib.sh's start_sshd: 127.0.0.1:$SSH_PORT,
# user nobody, works as root and as uid 65534) named git.test, allowed by
# `allow git.test:PORT { private }` (issue 12): an opaque tunnel, the
# server speaking first.  Twice each: with no proxy setting at all
# (captured), and with ProxyCommand 'nc -X 5 -x 127.0.0.1:1080 %h %p'
# (SOCKS5).  The key and the pinned known_hosts are in the work directory
# (the sandbox's /tmp is its own); StrictHostKeyChecking=yes, so a wrong
# host fails.  First the same, directly, outside the sandbox: the fixture
# works.  A denied name and a closed port fail at once, logged.
# usage: capture_ssh.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/capture_lib.sh"
ph_begin capture_ssh ssh ssh-keygen sshd unshare git nc jq
start_sshd || exit 1
W=$T/work
mkdir -p "$W"
cp "$SSH_DIR/id" "$SSH_DIR/known_hosts" "$W/"
chmod 600 "$W/id"
CLOSED_PORT=$(rand_port) || exit 1
# The repository, a file of the test (sshd's user owns it inside).
(
	git_env
	git init -q --bare -b main "$T/git/repo.git" &&
		git init -q -b main "$T/seed" &&
		echo 'over ssh' >"$T/seed/README" &&
		git -C "$T/seed" add README && git -C "$T/seed" commit -q -m 'first commit' &&
		git -C "$T/seed" push -q "$T/git/repo.git" main
) >"$T/seed.log" 2>&1 || { cat "$T/seed.log" && exit 1; }
REPO=$T/git/repo.git

# --- the fixture, directly ------------------------------------------------------
# shellcheck disable=SC2046,SC2016	# ssh_opts: one word each; $(id) remote
got=$(timeout 30 ssh $(ssh_opts "$W") -p "$SSH_PORT" nobody@127.0.0.1 \
	'echo ssh-ok $(id -u)' 2>&1)
equal "fixture: ssh directly runs a command as nobody" "$got" "ssh-ok 65534"
(
	git_env
	GIT_SSH_COMMAND="ssh $(ssh_opts "$W")"
	export GIT_SSH_COMMAND
	timeout 30 git clone -q "ssh://nobody@127.0.0.1:$SSH_PORT$REPO" "$T/direct"
) >"$T/direct.log" 2>&1
check "fixture: git clone ssh:// directly" grep -qx 'over ssh' "$T/direct/README"
[ "$failed" -eq 0 ] || { cat "$T/direct.log" "$T/sshd.err"; exit 1; }

cat >"$T/p.conf" <<EOF
resolve git.test 127.0.0.1
resolve denied.test 127.0.0.1
allow git.test:$SSH_PORT { private }
EOF
# Inside: the key and known_hosts by absolute path in the work directory.
SSH="ssh $(ssh_opts "$W")"
SOCKS="-o ProxyCommand='nc -X 5 -x 127.0.0.1:1080 %h %p'"
cat >"$W/ms.sh" <<'EOF'
t0=$(date +%s%N)
"$@"
rc=$?
echo "rc=$rc ms=$((($(date +%s%N) - t0) / 1000000))"
EOF

cap_run sh -c "
	echo '--- ssh'; $SSH -p $SSH_PORT nobody@git.test 'echo ssh-ok \$(id -u)'
	echo '--- ssh-socks'; $SSH $SOCKS -p $SSH_PORT nobody@git.test 'echo ssh-ok \$(id -u)'
	echo '--- git'; GIT_SSH_COMMAND=\"$SSH\" git clone -q ssh://nobody@git.test:$SSH_PORT$REPO c1 &&
		cat c1/README
	echo '--- git-socks'; GIT_SSH_COMMAND=\"$SSH $SOCKS\" git clone -q ssh://nobody@git.test:$SSH_PORT$REPO c2 &&
		cat c2/README
	echo '--- closed'; sh ms.sh $SSH -p $CLOSED_PORT nobody@git.test true 2>&1
	echo '--- denied'; sh ms.sh $SSH -p $SSH_PORT nobody@denied.test true 2>&1
	echo '--- end'"
show_out ssh
section() { sed -n "/^--- $1\$/,/^---/p" <<<"$OUT" | sed '1d;$d'; }
equal "ssh, captured: the command ran on the server" "$(section ssh)" "ssh-ok 65534"
equal "ssh through SOCKS5: the command ran" "$(section ssh-socks)" "ssh-ok 65534"
equal "git clone ssh://, captured" "$(section git)" "over ssh"
equal "git clone ssh:// through SOCKS5" "$(section git-socks)" "over ssh"
fails_fast() {
	local s ms
	s=$(section "$1")
	ms=$(sed -n 's/^rc=[1-9][0-9]* ms=\([0-9]*\)$/\1/p' <<<"$s")
	if [ -n "$ms" ] && [ "$ms" -lt "$CAP_FAST_MS" ]; then ok "$2 ($ms ms)"; else
		bad "$2: $(tr '\n' ' ' <<<"$s")"
	fi
}
fails_fast closed "ssh to git.test on a port no rule names fails at once"
expect "ssh: ... connection refused" "$(section closed)" 'Connection refused'
fails_fast denied "ssh to a denied name fails at once"
expect "ssh: ... the name does not exist" "$(section denied)" \
	'Name or service not known|No address associated'

n=$(jq -c "select(.event == \"end\" and .via == \"capture\" and .host == \"git.test\" and .port == $SSH_PORT and .bytes_up > 0 and .bytes_down > 0)" \
	"$T/audit.jsonl" 2>/dev/null | wc -l)
equal "audit: ssh and git, two captured tunnels to git.test, bytes both ways" "$n" 2
n=$(jq -c "select(.event == \"end\" and .via == \"socks\" and .host == \"git.test\" and .port == $SSH_PORT and .bytes_up > 0 and .bytes_down > 0)" \
	"$T/audit.jsonl" 2>/dev/null | wc -l)
equal "audit: ssh and git, two SOCKS5 tunnels to git.test, bytes both ways" "$n" 2
jq_has "audit: the closed port refused, by name" \
	"select(.via == \"capture\" and .host == \"git.test\" and .port == $CLOSED_PORT and .decision == \"deny\")"
jq_has "audit: denied.test: NXDOMAIN" \
	'select(.event == "dns" and .host == "denied.test" and .answer == "nxdomain")'
jq_none "audit: nothing through the explicit proxy" 'select(.via == "proxy")'
ph_end
