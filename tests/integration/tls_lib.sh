#!/usr/bin/env bash
# tls_lib.sh: the TLS test servers of the interception scenarios, sourced
# after lib.sh (and ph_begin):
#	. "$(dirname "$0")/lib.sh"
#	. "$(dirname "$0")/tls_lib.sh"
#	ph_begin NAME nginx fcgiwrap git curl openssl socat
#
#	gen_host_cert NAME...	$T/NAME.pem, $T/NAME.key from the test CA
#	gen_other_ca		$T/other-ca.pem, $T/untrusted.{pem,key} (git.test
#				from that CA), $T/wrong.{pem,key} (wrong.test only)
#	start_git_server	HTTPS Git smart HTTP, Basic auth: GIT_PORT,
#				GIT_TOKEN, GIT_TOKEN_FILE, GIT_AUTH_HEADER
#	start_echo_server [plain | CERT]
#				echoes the request head: ECHO_PORT /
#				ECHO_HTTP_PORT; ECHO_LAST_PORT for any;
#				"GET /upgrade" switches protocols (101),
#				then echoes one line as "echo:LINE"
#	git_env			HOME, identity, no prompt, no system config
#
# Same rules as lib.sh: servers are spawned (own process group, killed at
# exit), readiness is a polled condition, every file is under $T, all
# traffic on 127.0.0.1, and it works as root and as any other user.
# shellcheck disable=SC2034	# the variables set are for the scenarios
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "tls_lib.sh: helpers sourced by the TLS scenarios; not a test of its own"
	exit 0
fi

GIT_HTTP_BACKEND=/usr/lib/git-core/git-http-backend

# --- certificates -------------------------------------------------------------

# tls_sign OUT CA-PEM CA-KEY SAN: an EC P-256 server certificate
# $T/OUT.pem (key $T/OUT.key) for the subjectAltName SAN (the first DNS
# name is the CN), signed by CA-PEM/CA-KEY, valid for a day.
tls_sign() {
	local out=$1 ca=$2 cakey=$3 san=$4 d=$T/pki cn
	cn=${san#DNS:}
	cn=${cn%%,*}
	mkdir -p "$d"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$T/$out.key" -out "$d/$out.csr" -subj "/CN=$cn" \
		>>"$d/log" 2>&1 || { tail -20 "$d/log"; return 1; }
	cat >"$d/$out.ext" <<-EOF
		basicConstraints=CA:FALSE
		keyUsage=critical,digitalSignature
		extendedKeyUsage=serverAuth
		subjectAltName=$san
	EOF
	openssl x509 -req -in "$d/$out.csr" -CA "$ca" -CAkey "$cakey" \
		-CAcreateserial -out "$T/$out.pem" -days 1 \
		-extfile "$d/$out.ext" >>"$d/log" 2>&1 || { tail -20 "$d/log"; return 1; }
}

# gen_host_cert NAME [NAME...]: $T/NAME.pem and $T/NAME.key (NAME the
# first name) for DNS:NAME... and IP:127.0.0.1, signed by the test CA of
# gen_certs ($T/ca.pem), which it makes when it is not there yet.
gen_host_cert() {
	local n san=
	[ -s "$T/pki/ca.key" ] || gen_certs || return 1
	for n in "$@"; do san+="DNS:$n,"; done
	tls_sign "$1" "$T/ca.pem" "$T/pki/ca.key" "${san}IP:127.0.0.1"
}

# gen_other_ca: a second CA nobody trusts ($T/other-ca.pem, key
# $T/pki/other-ca.key) with $T/untrusted.pem/.key from it for git.test and
# 127.0.0.1; and $T/wrong.pem/.key from the good CA for wrong.test only
# (no IP either, so it matches no name a test connects to).
gen_other_ca() {
	local d=$T/pki
	[ -s "$d/ca.key" ] || gen_certs || return 1
	make_ca "$d/other-ca.key" "$T/other-ca.pem" "pinhole untrusted test CA" ||
		return 1
	tls_sign untrusted "$T/other-ca.pem" "$d/other-ca.key" \
		"DNS:git.test,IP:127.0.0.1" || return 1
	tls_sign wrong "$T/ca.pem" "$d/ca.key" "DNS:wrong.test"
}

# --- git ----------------------------------------------------------------------

# git_env: the environment of git commands in a test: HOME=$T/home, no
# system or XDG config, no prompt or askpass, a fixed identity.
git_env() {
	mkdir -p "$T/home"
	export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t
	export GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
	unset XDG_CONFIG_HOME GIT_ASKPASS SSH_ASKPASS GIT_DIR GIT_WORK_TREE \
		GIT_SSL_CAINFO GIT_SSL_NO_VERIFY GIT_PROXY_COMMAND
}

# git_seed_repos: bare repositories $T/git/allowed.git and other.git, one
# commit each on main, pushes allowed (http.receivepack).
git_seed_repos() (
	local r w
	git_env
	for r in allowed other; do
		w=$T/seed/$r
		git init -q --bare -b main "$T/git/$r.git" &&
			git -C "$T/git/$r.git" config http.receivepack true &&
			git init -q -b main "$w" &&
			echo "$r repository" >"$w/README" &&
			git -C "$w" add README &&
			git -C "$w" -c user.name=t -c user.email=t@t commit -q \
				-m "first commit of $r" &&
			git -C "$w" push -q "$T/git/$r.git" main ||
			return 1
	done
)

# start_git_server: Git smart HTTP over TLS on 127.0.0.1:$GIT_PORT with the
# certificate $T/git.test.pem (git.test, 127.0.0.1; made here when
# missing).  nginx (one foreground process of the calling user, as
# start_nginx) passes /NAME.git/... to git-http-backend through fcgiwrap
# on $T/fcgiwrap.sock; the repositories are $T/git/allowed.git and
# $T/git/other.git (one commit on main each, push allowed).  Both need
# Basic auth: user x-access-token, password $GIT_TOKEN (random unless
# already set).  /echo-auth (no auth) answers the Authorization field it
# got, or an empty line.  Sets GIT_PORT, GIT_TOKEN (exported),
# GIT_TOKEN_FILE ($T/git-token: the token and a newline, mode 600),
# GIT_AUTH_HEADER ("Authorization: Basic ..."), GIT_NGINX_PID, FCGIWRAP_PID.
start_git_server() {
	local d=$T/git-nginx hash
	mkdir -p "$d" "$T/home"
	[ -s "$T/git.test.pem" ] || gen_host_cert git.test || return 1
	[ -d "$T/git/allowed.git" ] || git_seed_repos >"$d/seed.log" 2>&1 ||
		{ echo "$PH_NAME: git repositories not made:"; cat "$d/seed.log"; return 1; }

	[ -n "${GIT_TOKEN:-}" ] ||
		GIT_TOKEN=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
	export GIT_TOKEN
	GIT_TOKEN_FILE=$T/git-token
	(umask 077 && printf '%s\n' "$GIT_TOKEN" >"$GIT_TOKEN_FILE")
	GIT_AUTH_HEADER="Authorization: Basic $(printf 'x-access-token:%s' \
		"$GIT_TOKEN" | base64 -w0)"
	hash=$(printf '%s\n' "$GIT_TOKEN" | openssl passwd -apr1 -stdin) ||
		return 1
	printf 'x-access-token:%s\n' "$hash" >"$d/htpasswd"

	# fcgiwrap hands a CGI only the FastCGI parameters as its environment;
	# -p: it runs nothing but git-http-backend.  One process (no -c N):
	# preforked workers whose parent dies first at cleanup are orphans, and
	# an init that reaps late keeps them as zombies for minutes; so
	# requests (each a CGI child) are served one at a time.
	if [ -z "${FCGIWRAP_PID:-}" ] || pid_done "$FCGIWRAP_PID"; then
		rm -f "$T/fcgiwrap.sock"
		spawn fcgiwrap fcgiwrap -p "$GIT_HTTP_BACKEND" \
			-s "unix:$T/fcgiwrap.sock"
		FCGIWRAP_PID=$SPAWNED
		wait_for 10 fcgiwrap_up
		if [ ! -S "$T/fcgiwrap.sock" ] || pid_done "$FCGIWRAP_PID"; then
			echo "$PH_NAME: fcgiwrap did not start:"
			tail -20 "$T/fcgiwrap.err" 2>/dev/null
			return 1
		fi
	fi

	nginx_serve git-nginx GIT_NGINX_PID GIT_PORT git_nginx_conf
}

# git_nginx_conf DIR: start_git_server's server block.
git_nginx_conf() {
	cat <<-EOF
		default_type text/plain;
		client_max_body_size 0;
		server {
			listen 127.0.0.1:$GIT_PORT ssl;
			server_name git.test;
			ssl_certificate $T/git.test.pem;
			ssl_certificate_key $T/git.test.key;
			location = /echo-auth { return 200 "\$http_authorization\n"; }
			location ~ ^/[^/]+\.git(/.*)?\$ {
				auth_basic "git";
				auth_basic_user_file $1/htpasswd;
				fastcgi_pass unix:$T/fcgiwrap.sock;
				fastcgi_param SCRIPT_FILENAME $GIT_HTTP_BACKEND;
				fastcgi_param GIT_PROJECT_ROOT $T/git;
				fastcgi_param GIT_HTTP_EXPORT_ALL 1;
				fastcgi_param GIT_CONFIG_NOSYSTEM 1;
				fastcgi_param HOME $T/home;
				fastcgi_param PATH /usr/bin:/bin;
				fastcgi_param GIT_PROTOCOL \$http_git_protocol;
				fastcgi_param PATH_INFO \$uri;
				fastcgi_param REMOTE_USER \$remote_user;
				fastcgi_param REMOTE_ADDR \$remote_addr;
				fastcgi_param REQUEST_METHOD \$request_method;
				fastcgi_param QUERY_STRING \$query_string;
				fastcgi_param CONTENT_TYPE \$content_type;
				fastcgi_param CONTENT_LENGTH \$content_length;
				fastcgi_param SERVER_PROTOCOL \$server_protocol;
				fastcgi_param GATEWAY_INTERFACE CGI/1.1;
			}
			location / { return 404 "no such repository\n"; }
		}
	EOF
}

fcgiwrap_up() { [ -S "$T/fcgiwrap.sock" ] || pid_done "$FCGIWRAP_PID"; }

# --- the echo server ----------------------------------------------------------

# echo_script: $T/echo.sh, the per-connection program of the echo server:
# reads the request head up to the empty line, drops a Content-Length
# body, and answers 200 with the head (CRs removed, one LF a line) as the
# body, then closes; it also appends the head to $T/echo.log.
echo_script() {
	[ -x "$T/echo.sh" ] && return 0
	cat >"$T/echo.sh" <<-'EOF'
		#!/bin/sh
		# One connection of the echo server (tls_lib.sh).
		LC_ALL=C
		export LC_ALL
		cr=$(printf '\r')
		req='' len=0
		while IFS= read -r line; do
			line=${line%"$cr"}
			[ -z "$line" ] && break
			req="$req$line
		"
			case $line in
			[Cc][Oo][Nn][Tt][Ee][Nn][Tt]-[Ll][Ee][Nn][Gg][Tt][Hh]:*)
				len=$(printf '%s' "${line#*:}" | tr -dc 0-9) ;;
			esac
		done
		[ "${len:-0}" -gt 0 ] 2>/dev/null && head -c "$len" >/dev/null
		# What arrived, for the test to read outside (echo_seen).
		printf '%s' "$req" >>"${0%/*}/echo.log"
		case $req in
		"GET /upgrade "*)
			# Switch protocols, answer one line, close.
			printf 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n'
			IFS= read -r line
			printf 'echo:%s\n' "${line%"$cr"}"
			exit 0 ;;
		esac
		printf 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
			"${#req}" "$req"
	EOF
	chmod 755 "$T/echo.sh"
}

# echo_seen: prints the request heads the echo servers received since the
# last call (a response that echoes a credential is cut by the proxy, so
# what the upstream got is read here), and forgets them.
echo_seen() {
	cat "$T/echo.log" 2>/dev/null
	: >"$T/echo.log"
}

# start_echo_server [plain | CERT]: a server on 127.0.0.1 that answers
# every request with 200 and the request head as received (request line
# and header lines in order, duplicates kept, CRs removed) as the body;
# one request per connection.  Over TLS (socat, no client certificate)
# with $T/echo.test.pem (made when missing) on $ECHO_PORT; "plain": plain
# HTTP on $ECHO_HTTP_PORT; CERT: over TLS with $T/CERT.pem and
# $T/CERT.key (untrusted, wrong: see gen_other_ca), port only in
# ECHO_LAST_PORT.  Every variant sets ECHO_LAST_PORT and ECHO_PID.
start_echo_server() {
	local mode=${1:-echo.test} listen
	echo_script || return 1
	if [ "$mode" = plain ]; then
		start_socat echo-plain \
			"TCP-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork" \
			"EXEC:$T/echo.sh" || return 1
		ECHO_HTTP_PORT=$SOCAT_PORT
	else
		if [ ! -s "$T/$mode.pem" ]; then
			[ "$mode" = echo.test ] || {
				echo "$PH_NAME: start_echo_server: no $T/$mode.pem"
				return 1
			}
			gen_host_cert echo.test || return 1
		fi
		listen="OPENSSL-LISTEN:@PORT@,bind=127.0.0.1,reuseaddr,fork"
		listen+=",cert=$T/$mode.pem,key=$T/$mode.key,verify=0"
		start_socat "echo-$mode" "$listen" "EXEC:$T/echo.sh" || return 1
		[ "$mode" = echo.test ] && ECHO_PORT=$SOCAT_PORT
	fi
	ECHO_LAST_PORT=$SOCAT_PORT
	ECHO_PID=$SPAWNED
}
