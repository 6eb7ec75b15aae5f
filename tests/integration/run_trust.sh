#!/usr/bin/env bash
# Scenario: what the sandbox trusts.  An nginx on loopback serves HTTPS
# with a certificate from a private test CA; web.test is intercepted (the
# sandbox sees the run CA), other.test is an opaque tunnel (the sandbox
# sees the private CA, given with `trust`).  curl with the user's own
# --setenv CURL_CA_BUNDLE reaches both: that bundle is kept and the run
# CA and the trust file are added to it.  PINHOLE_CA_FILE holds the run
# CA alone; openssl s_client -CApath "$SSL_CERT_DIR" verifies both hosts;
# without the trust line the tunnelled host is refused; a trust file with
# a key in it, or a bundle of the user's that cannot be read, stops the
# run; `pinhole check` says what is wrong with a trust file.
# usage: run_trust.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
ph_begin run_trust nginx fcgiwrap git curl openssl python3
gen_certs >/dev/null || exit 1
gen_other_ca || exit 1
start_nginx || exit 1
start_git_server || exit 1
W=$T/work
mkdir -p "$W"

# The user's own bundle: a CA nobody else uses, and no system CA.
cp "$T/other-ca.pem" "$T/user-bundle.pem"
policy() {
	cat <<-EOC
		resolve web.test 127.0.0.1
		resolve other.test 127.0.0.1
		allow web.test:$S_PORT { private upstream-ca $T/ca.pem methods GET }
		allow other.test:$S_PORT { private }
	EOC
}
{ echo "trust $T/ca.pem"; policy; } >"$T/p.conf"
policy >"$T/notrust.conf"
{ echo "trust $T/ca.pem"; echo "allow other.test:$S_PORT { private }"
	echo "resolve other.test 127.0.0.1"; } >"$T/tunnel.conf"

# subject FILE: the subject of each certificate in FILE, one a line.
SUBJECTS='awk "/BEGIN CERT/{c=\"\"} {c=c\$0\"\\n\"} /END CERT/{printf \"%s\", c | \"openssl x509 -noout -subject\"; close(\"openssl x509 -noout -subject\")}"'

# --- the user's CURL_CA_BUNDLE, intercepted and tunnelled hosts ---------------
prun -p "$T/p.conf" --setenv CURL_CA_BUNDLE "$T/user-bundle.pem" -- sh -c "
	curl -sS https://web.test:$S_PORT/whoami
	curl -sS https://other.test:$S_PORT/whoami
	echo \"bundle=\$CURL_CA_BUNDLE\"
	$SUBJECTS \"\$CURL_CA_BUNDLE\"
	echo ca-file:; $SUBJECTS \"\$PINHOLE_CA_FILE\"
	echo \"node=\$NODE_EXTRA_CA_CERTS\"; $SUBJECTS \"\$NODE_EXTRA_CA_CERTS\"
	echo \"git=\${GIT_SSL_CAINFO-unset} pip=\${PIP_CERT-unset}\""
equal "user bundle: status" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/  | /'
expect "intercepted host reached" "$OUT" "^host=web\.test uri=/whoami$"
expect "tunnelled host reached" "$OUT" "^host=other\.test uri=/whoami$"
expect "CURL_CA_BUNDLE: a combined copy" "$OUT" \
	'^bundle=/tmp/\.pinhole-trust/env/CURL_CA_BUNDLE\.pem$'
expect "the user's CA is in it" "$OUT" 'subject=CN ?= ?pinhole untrusted test CA'
expect "the trust file is in it" "$OUT" 'subject=CN ?= ?pinhole test CA'
expect "the run CA is in it" "$OUT" 'subject=.*pinhole'
equal "no system CA in the user's bundle" \
	"$(sed -n '/^bundle=/,/^ca-file:/p' <<<"$OUT" | grep -c '^subject=')" 3
equal "PINHOLE_CA_FILE: one certificate" \
	"$(sed -n '/^ca-file:/,/^node=/p' <<<"$OUT" | grep -c '^subject=')" 1
refuse "PINHOLE_CA_FILE: not the trust file" \
	"$(sed -n '/^ca-file:/,/^node=/p' <<<"$OUT")" 'pinhole (untrusted )?test CA'
expect "NODE_EXTRA_CA_CERTS: the added ones only" "$OUT" \
	'^node=/tmp/\.pinhole-trust/extra\.pem$'
equal "NODE_EXTRA_CA_CERTS: run CA and trust file" \
	"$(sed -n '/^node=/,/^git=/p' <<<"$OUT" | grep -c '^subject=')" 2
expect "git's and pip's own settings left alone" "$OUT" '^git=unset pip=unset$'

# --- SSL_CERT_DIR: a hashed directory OpenSSL verifies with -------------------
prun -p "$T/p.conf" -- sh -c "
	for h in web.test other.test; do
		openssl s_client -proxy 127.0.0.1:3128 -connect \$h:$S_PORT \
			-servername \$h -CApath \"\$SSL_CERT_DIR\" -verify_return_error \
			</dev/null 2>&1 | grep -a 'Verify return code' | sed \"s/^/\$h /\"
	done
	ls \"\$SSL_CERT_DIR\" | grep -c -E '^[0-9a-f]{8}\.[0-9]+\$'"
equal "SSL_CERT_DIR: status" "$RC" 0
expect "s_client -CApath: intercepted host verified" "$OUT" \
	'^web\.test +Verify return code: 0 \(ok\)'
expect "s_client -CApath: tunnelled host verified" "$OUT" \
	'^other\.test +Verify return code: 0 \(ok\)'
expect "SSL_CERT_DIR: hash-named certificates" "$OUT" '^[0-9]{2,}$'

# --- controls ---------------------------------------------------------------------
prun -p "$T/notrust.conf" -- curl -sS -o /dev/null \
	"https://other.test:$S_PORT/whoami"
equal "no trust line: the tunnelled host is refused (curl 60)" "$RC" 60
prun -p "$T/tunnel.conf" -- sh -c "
	curl -sS https://other.test:$S_PORT/whoami
	echo \"ca=\${PINHOLE_CA_FILE-unset} file=\$SSL_CERT_FILE\""
expect "trust without interception: reached" "$OUT" "^host=other\.test uri=/whoami$"
expect "trust without interception: no PINHOLE_CA_FILE" "$OUT" \
	'^ca=unset file=/tmp/\.pinhole-trust/bundle\.pem$'
prun -p "$T/notrust.conf" --setenv REQUESTS_CA_BUNDLE "$T/missing.pem" -- true
equal "an unreadable bundle of the user's: refused" "$RC" 125
expect "it says which" "$ERR" "REQUESTS_CA_BUNDLE=$T/missing\.pem: cannot read it"

# --- git's own http.sslCAInfo stays in force, and trusts the run CA ----------------
# A home in the work directory (the sandbox's /tmp is its own), whose
# .gitconfig names a CA file; GIT_SSL_CAINFO would beat it, so pinhole
# leaves it unset and puts a copy of the file with the run CA over it.
mkdir -p "$W/home"
cp "$T/ca.pem" "$W/git-ca.pem"
printf '[http]\n\tsslCAInfo = %s\n' "$W/git-ca.pem" >"$W/home/.gitconfig"
{ policy; echo "resolve git.test 127.0.0.1"
	echo "allow git.test:$GIT_PORT { private }"; } >"$T/git-tunnel.conf"
{ policy; echo "resolve git.test 127.0.0.1"; echo "secret gh file $GIT_TOKEN_FILE"
	echo "allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem inject basic x-access-token gh }"
} >"$T/git-intercept.conf"
GITENV=(--setenv HOME "$W/home" --setenv GIT_CONFIG_NOSYSTEM 1 --setenv GIT_TERMINAL_PROMPT 0)
prun -p "$T/git-tunnel.conf" "${GITENV[@]}" -- sh -c "
	echo "git=\${GIT_SSL_CAINFO-unset}"
	git ls-remote https://x-access-token:$GIT_TOKEN@git.test:$GIT_PORT/allowed.git main"
expect "git, tunnelled: http.sslCAInfo used" "$OUT" 'refs/heads/main$'
expect "git: GIT_SSL_CAINFO left unset" "$OUT" '^git=unset$'
prun -p "$T/git-intercept.conf" "${GITENV[@]}" -- \
	git ls-remote "https://git.test:$GIT_PORT/allowed.git" main
expect "git, intercepted: http.sslCAInfo's file trusts the run CA" "$OUT" 'refs/heads/main$'
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/  | /'
equal "git: the host's file is unchanged" "$(cat "$W/git-ca.pem")" "$(cat "$T/ca.pem")"
# The user's --setenv GIT_SSL_CAINFO wins, with the run CA added.
cp "$T/ca.pem" "$T/user-git.pem"
prun -p "$T/git-intercept.conf" "${GITENV[@]}" --setenv HOME /nonexistent \
	--setenv GIT_SSL_CAINFO "$T/user-git.pem" -- sh -c "
	echo \"git=\$GIT_SSL_CAINFO\"
	git ls-remote https://git.test:$GIT_PORT/allowed.git main"
expect "git: the user's GIT_SSL_CAINFO, combined" "$OUT" \
	'^git=/tmp/\.pinhole-trust/env/GIT_SSL_CAINFO\.pem$'
expect "git: the user's GIT_SSL_CAINFO works when intercepted" "$OUT" 'refs/heads/main$'

# --- pip's own cert = stays in force (REQUESTS_CA_BUNDLE would beat it) -----------
# A simple index with one wheel on the nginx; ~/.config/pip/pip.conf
# names a CA file; pip (Debian's, requests inside) downloads through a
# tunnel and through interception, with no trust line.
mkdir -p "$T/www/simple/pkg" "$T/www/files" "$W/home/.config/pip"
python3 - "$T/www/files/pkg-1.0-py3-none-any.whl" <<-'EOPY'
	import sys, zipfile
	with zipfile.ZipFile(sys.argv[1], "w") as z:
	    z.writestr("pkg/__init__.py", "")
	    z.writestr("pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
	    z.writestr("pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
	    z.writestr("pkg-1.0.dist-info/RECORD", "")
EOPY
echo '<a href="../../files/pkg-1.0-py3-none-any.whl">pkg-1.0-py3-none-any.whl</a>' \
	>"$T/www/simple/pkg/index.html"
cp "$T/ca.pem" "$W/pip-ca.pem"
printf '[global]\ncert = %s\n' "$W/pip-ca.pem" >"$W/home/.config/pip/pip.conf"
PIP="python3 -m pip download -q --no-deps --disable-pip-version-check -d dl"
prun -p "$T/notrust.conf" --setenv HOME "$W/home" -- sh -c "
	echo \"requests=\$REQUESTS_CA_BUNDLE pip=\${PIP_CERT-unset}\"
	$PIP --index-url https://other.test:$S_PORT/simple/ pkg && echo tunnelled-ok
	rm -rf dl
	$PIP --index-url https://web.test:$S_PORT/simple/ pkg && echo intercepted-ok"
expect "pip: requests' variable holds pip's certificates" "$OUT" \
	'^requests=/tmp/\.pinhole-trust/requests\.pem pip=unset$'
expect "pip, tunnelled: cert = used" "$OUT" '^tunnelled-ok$'
expect "pip, intercepted: cert = and the run CA" "$OUT" '^intercepted-ok$'
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/  | /'
check "pip: the wheel came" test -s "$W/dl/pkg-1.0-py3-none-any.whl"

# --- a trust file that holds more than certificates -------------------------------
cat "$T/ca.pem" "$T/server.key" >"$T/with-key.pem"
echo "trust $T/with-key.pem" >"$T/bad.conf"
echo "allow other.test:$S_PORT { private }" >>"$T/bad.conf"
prun -p "$T/bad.conf" -- true
equal "a key in a trust file: refused" "$RC" 125
expect "it says why" "$ERR" "trust $T/with-key\.pem: holds a [A-Z ]*PRIVATE KEY block"
"$PINHOLE" check "$T/bad.conf" >"$T/check.out" 2>&1
equal "check: an error" "$?" 1
expect "check: names the line" "$(cat "$T/check.out")" \
	"bad\.conf:1:1: trust $T/with-key\.pem: holds a"
"$PINHOLE" check "$T/p.conf" >"$T/check.out" 2>&1
equal "check: a good trust file" "$?" 0
# Within the sandbox's reach: refused like any file pinhole trusts.
cp "$T/ca.pem" "$W/ca.pem"
{ echo "trust $W/ca.pem"; policy; } >"$T/reach.conf"
prun -p "$T/reach.conf" -- true
equal "a trust file the sandbox could write: refused" "$RC" 125
expect "it says which" "$ERR" "trust file .*lies in a directory the sandbox may write"
ph_end
