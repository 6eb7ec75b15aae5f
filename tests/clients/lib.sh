#!/usr/bin/env bash
# lib.sh: the local registries of the real-client suite (issue 11), sourced
# after tests/integration/lib.sh and tls_lib.sh:
#	. "$SRC/tests/integration/lib.sh"	# with "$@" = PATH-TO-PINHOLE
#	. "$SRC/tests/integration/tls_lib.sh"
#	. "$SRC/tests/clients/lib.sh"
#	cl_begin NAME TOOL...		# ph_begin, certificates, scratch home
#	make_pypi; make_npm; ...	# the registries the client needs
#	start_registries		# one nginx over TLS for all of them
#	cl_policy			# $T/p.conf: resolve, allow, inject
#	home_snapshot before
#	cl_run -- CLIENT ...		# `pinhole run`, as a user would
#	home_unchanged before
#	ph_end
#
# Every registry is static files generated here under $T (no network, no
# download): a PyPI simple index (PEP 503) with two wheels made by hand, an
# npm registry (metadata documents and `npm pack` tarballs with sha512
# integrity), a cargo index (sparse, and the same as a git repository for
# a cargo older than 1.68), a Go module proxy (GOPROXY protocol) and plain
# files for curl and wget.  One nginx serves them over TLS on
# 127.0.0.1:$REG_PORT, one server name each (pypi.test, npm.test,
# crates.test, goproxy.test, files.test), and answers 401 to any request
# that lacks the registry's own token: only pinhole holds the tokens and
# injects them (`inject basic|bearer` in cl_policy), so a client that gets
# its data got it through pinhole.
#
# The clients get no help for pinhole's sake: only what a user sets to use
# that registry at all (its URL).  HOME is a scratch home (in /var/tmp)
# with a few dotfiles, snapshotted before and compared after (home_unchanged).
# shellcheck disable=SC2034	# the variables set are for the scripts
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	echo "lib.sh: helpers sourced by tests/clients/*.sh; not a test of its own"
	exit 0
fi

REG_HOSTS=(pypi.test npm.test crates.test goproxy.test files.test)
# Debian's python3: not a pyenv shim, which a scratch HOME would break.
PY=/usr/bin/python3

# --- results: one line per check ------------------------------------------------

ok() {
	passed=$((passed + 1))
	[ -z "${1:-}" ] || echo "ok: $1"
}
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name (command: $*)"; fi
}
expect() {
	if grep -qE -- "$3" <<<"$2"; then ok "$1"; else
		bad "$1: no match for /$3/ in:"
		printf '%s\n' "$2" | tail -40 | sed 's/^/  | /'
	fi
}
refuse() {
	if grep -qE -- "$3" <<<"$2"; then
		bad "$1: unexpected /$3/ in:"
		printf '%s\n' "$2" | grep -E -- "$3" | head -20 | sed 's/^/  | /'
	else ok "$1"; fi
}
equal() {
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}

# --- life cycle -------------------------------------------------------------------

# cl_begin NAME TOOL...: ph_begin, the test CA and the registries'
# certificate, a scratch home $CL_HOME (HOME exported) with a few dotfiles
# and the clients' cache directories, each with a file of its own.
cl_begin() {
	ph_begin "$@"
	gen_certs >/dev/null || exit 1
	gen_host_cert "${REG_HOSTS[@]}" || exit 1
	# Not under $T: the sandbox gets a /tmp of its own, where a home in
	# /tmp would not exist (and npm, say, would pass for that reason).
	# /var/tmp is seen read-only inside, like a real home.
	CL_HOME=$(mktemp -d /var/tmp/ph-home-"$PH_NAME".XXXXXX) || exit 1
	chmod 755 "$CL_HOME"
	trap cl_cleanup EXIT
	mkdir -p "$CL_HOME/.config/app" "$CL_HOME/.local/bin"
	printf '# ~/.profile of the scratch home\nexport EDITOR=vi\n' >"$CL_HOME/.profile"
	printf '# ~/.bashrc\nalias ll="ls -l"\n' >"$CL_HOME/.bashrc"
	printf '[user]\n\tname = Test User\n\temail = user@example.test\n' \
		>"$CL_HOME/.gitconfig"
	printf 'setting = 1\n' >"$CL_HOME/.config/app/app.conf"
	chmod 600 "$CL_HOME/.config/app/app.conf"
	# The caches of a user who ran these tools before: what a sandbox must
	# never write (a poisoned cache would run its code outside later).
	for c in .npm/_cacache .cargo/registry go/pkg/mod/cache .cache/pip \
		.cache/go-build; do
		mkdir -p "$CL_HOME/$c"
		printf 'the host'"'"'s own cache\n' >"$CL_HOME/$c/host-marker"
	done
	# mtimes in the past, so that a rewrite of the same bytes shows too.
	find "$CL_HOME" -exec touch -h -d '2024-01-02 03:04:05' {} +
	export HOME=$CL_HOME
	unset XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME XDG_STATE_HOME \
		PIP_INDEX_URL PIP_CONFIG_FILE npm_config_cache NPM_CONFIG_CACHE \
		npm_config_registry CARGO_HOME GOPATH GOMODCACHE GOCACHE GOFLAGS \
		GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GONOPROXY
	mkdir -p "$T/reg" "$T/src"
}

# cl_cleanup: the scratch home (kept with PH_KEEP), then ph_cleanup.
cl_cleanup() {
	if [ -n "${CL_HOME:-}" ] && [ -z "${PH_KEEP:-}" ]; then
		rm -rf "$CL_HOME"
	elif [ -n "${CL_HOME:-}" ]; then
		echo "$PH_NAME: kept the scratch home $CL_HOME"
	fi
	ph_cleanup
}

# cl_run ARGS...: `pinhole run -p $T/p.conf ARGS...` in $W (see prun); the
# command's output (both streams) in OUT, pinhole's status in RC.  The
# audit log of every run is $T/audit.jsonl.
cl_run() {
	prun -p "$T/p.conf" "$@"
	OUT=$(cat "$T/prun.out" "$T/prun.err")
	# Under ASan (CI's third pass), pinhole's own reports land here.
	if file_has "$T/prun.err" 'ERROR: (Address|Leak)Sanitizer|runtime error:'; then
		bad "pinhole run $*: sanitizer report:"
		grep -E -A20 'ERROR: |runtime error:' "$T/prun.err" | head -30 | sed 's/^/  | /'
	fi
}

# show_run: the last 25 lines of the last run's output, after a failed check.
show_run() { printf '%s\n' "$OUT" | tail -25 | sed 's/^/  | /'; }

# run_ok NAME: the last run's status is 0 (its output shown when not).
run_ok() {
	if [ "$RC" -eq 0 ]; then ok "$1: exit status 0"; else
		bad "$1: exit status $RC"
		show_run
	fi
}

# --- the scratch home ---------------------------------------------------------------

# home_snapshot TAG: every entry of $HOME (type, size, mode, owner, mtime,
# link target) and the sha256 of every file, in $T/home.TAG.  pinhole's
# own cache (~/.cache/pinhole), which pinhole writes from outside the
# sandbox, is not part of what the sandbox may not change (nor is the
# mtime of ~/.cache, which making it moves).
home_snapshot() {
	(
		cd "$HOME" || exit 1
		# ~/.cache's own mtime moves when pinhole makes its cache there;
		# a change of the sandbox's inside ~/.cache shows as an entry.
		find . -path ./.cache/pinhole -prune -o -path ./.cache \
			-printf '%p %y %s %m %U:%G %l\n' -o \
			-printf '%p %y %s %m %U:%G %T@ %l\n' | sort
		find . -path ./.cache/pinhole -prune -o -type f -print0 |
			sort -z | xargs -0 -r sha256sum
	) >"$T/home.$1"
}

# home_unchanged TAG NAME: $HOME is as home_snapshot TAG saw it.
home_unchanged() {
	home_snapshot after
	if cmp -s "$T/home.$1" "$T/home.after"; then
		ok "$2: the scratch home is unchanged"
	else
		bad "$2: the scratch home changed:"
		diff "$T/home.$1" "$T/home.after" | head -20 | sed 's/^/  | /'
	fi
}

# --- the audit log ------------------------------------------------------------------

# audit_saw NAME HOST PATH-REGEX [SECRET]: the audit log has a request
# to HOST whose path matches PATH-REGEX answered 200 (its "end" record),
# with SECRET injected when given.
audit_saw() {
	local q
	q='select(.event == "end" and .status == 200 and .host == $h'
	q+=' and ((.path // "") | test($p))'
	[ -z "${4:-}" ] || q+=' and .secret == $s'
	q+=')'
	if [ -n "$(jq -c --arg h "$2" --arg p "$3" --arg s "${4:-}" "$q" \
		"$T/audit.jsonl" 2>/dev/null | head -1)" ]; then
		ok "$1: audit log: $2 /$3/ answered 200${4:+, secret $4}"
	else
		bad "$1: no request to $2 path /$3/ answered 200 ${4:+with secret $4} in the audit log:"
		jq -c "select(.host == \"$2\") | [.event, .method, .path, .decision, .status, .secret, .error]" \
			"$T/audit.jsonl" 2>/dev/null | tail -10 | sed 's/^/  | /'
	fi
}

# audit_no_denial NAME: nothing was denied and no token value is logged.
audit_clean() {
	local n
	n=$(jq -c 'select(.decision == "deny")' "$T/audit.jsonl" 2>/dev/null | wc -l)
	equal "$1: no request denied" "$n" 0
	if grep -q -F -f "$T/tokens" "$T/audit.jsonl" 2>/dev/null; then
		bad "$1: a token's value is in the audit log"
	else ok "$1: no token value in the audit log"; fi
}

# --- tokens -------------------------------------------------------------------------

# token NAME: a random token in $T/tok-NAME (mode 600), echoed; all of
# them in $T/tokens, one a line.
token() {
	local v
	v=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '%s\n' "$v" >"$T/tok-$1")
	printf '%s\n' "$v" >>"$T/tokens"
	printf '%s' "$v"
}

# --- the registries ---------------------------------------------------------------

# pad FILE: REG_PAD random bytes in FILE when REG_PAD is set (the bench's
# packages of a realistic size; the tests' are tiny).
pad() {
	[ -z "${REG_PAD:-}" ] || head -c "$REG_PAD" /dev/urandom >"$1"
}

# make_pypi: $T/reg/pypi/simple/ (PEP 503) and packages/ with two wheels
# made by hand: phalpha 1.0 and phbeta 1.0, which requires phalpha.
make_pypi() {
	"$PY" - "$T/reg/pypi" <<-'EOF' || return 1
		import base64, hashlib, os, sys, zipfile
		root = sys.argv[1]
		os.makedirs(root + "/packages", exist_ok=True)
		def wheel(name, requires):
		    fn = "%s-1.0-py3-none-any.whl" % name
		    di = "%s-1.0.dist-info" % name
		    files = {
		        name + "/__init__.py": "VALUE = %r\n" % ("hello from " + name),
		        di + "/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n%s" %
		            (name, "".join("Requires-Dist: %s\n" % r for r in requires)),
		        di + "/WHEEL": "Wheel-Version: 1.0\nGenerator: pinhole-test\n"
		            "Root-Is-Purelib: true\nTag: py3-none-any\n",
		    }
		    rec = ""
		    for p, c in files.items():
		        d = base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest())
		        rec += "%s,sha256=%s,%d\n" % (p, d.rstrip(b"=").decode(), len(c))
		    files[di + "/RECORD"] = rec + di + "/RECORD,,\n"
		    pad = int(os.environ.get("REG_PAD") or 0)
		    if pad:
		        files[name + "/pad.bin"] = base64.b64encode(os.urandom(pad)).decode()[:pad]
		        d = base64.urlsafe_b64encode(hashlib.sha256(files[name + "/pad.bin"].encode()).digest())
		        files[di + "/RECORD"] = ("%s/pad.bin,sha256=%s,%d\n" % (name, d.rstrip(b"=").decode(), pad)) + files[di + "/RECORD"]
		    with zipfile.ZipFile(root + "/packages/" + fn, "w") as z:
		        for p, c in files.items():
		            z.writestr(p, c)
		    sha = hashlib.sha256(open(root + "/packages/" + fn, "rb").read()).hexdigest()
		    os.makedirs(root + "/simple/" + name, exist_ok=True)
		    with open(root + "/simple/%s/index.html" % name, "w") as f:
		        f.write('<!DOCTYPE html><html><body>\n<a href="../../packages/%s#sha256=%s">%s</a>\n'
		                '</body></html>\n' % (fn, sha, fn))
		wheel("phalpha", [])
		wheel("phbeta", ["phalpha"])
		with open(root + "/simple/index.html", "w") as f:
		    f.write('<!DOCTYPE html><html><body>\n<a href="phalpha/">phalpha</a>\n'
		            '<a href="phbeta/">phbeta</a>\n</body></html>\n')
	EOF
}

# make_npm: $T/reg/npm: tarballs of phleft 1.0.0 and phright 1.0.0 (which
# depends on phleft ^1.0.0) packed by `npm pack`, and their metadata
# documents (meta/NAME.json, served as /NAME) with sha512 integrity.
make_npm() {
	local n dep
	mkdir -p "$T/reg/npm/meta"
	for n in phleft phright; do
		dep='{}'
		[ "$n" = phright ] && dep='{"phleft": "^1.0.0"}'
		mkdir -p "$T/src/npm/$n" "$T/reg/npm/$n/-"
		printf '{"name": "%s", "version": "1.0.0", "main": "index.js", "license": "MIT", "dependencies": %s}\n' \
			"$n" "$dep" >"$T/src/npm/$n/package.json"
		printf 'module.exports = "hello from %s";\n' "$n" >"$T/src/npm/$n/index.js"
		pad "$T/src/npm/$n/pad.bin"
		(cd "$T/src/npm/$n" && HOME=$T/src npm_config_cache=$T/src/npm-cache \
			npm pack --silent --offline --pack-destination "$T/reg/npm/$n/-") \
			>"$T/src/npm-pack.log" 2>&1 ||
			{ cat "$T/src/npm-pack.log"; return 1; }
	done
	"$PY" - "$T/reg/npm" "https://npm.test:$REG_PORT" <<-'EOF'
		import base64, hashlib, json, sys
		root, url = sys.argv[1], sys.argv[2]
		for n in ("phleft", "phright"):
		    tgz = "%s/%s/-/%s-1.0.0.tgz" % (root, n, n)
		    data = open(tgz, "rb").read()
		    pkg = json.load(open("%s/../../src/npm/%s/package.json" % (root, n)))
		    v = dict(pkg)
		    v["_id"] = n + "@1.0.0"
		    v["dist"] = {
		        "tarball": "%s/%s/-/%s-1.0.0.tgz" % (url, n, n),
		        "shasum": hashlib.sha1(data).hexdigest(),
		        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
		    }
		    doc = {"_id": n, "name": n, "dist-tags": {"latest": "1.0.0"},
		           "versions": {"1.0.0": v},
		           "time": {"1.0.0": "2024-01-01T00:00:00.000Z",
		                    "modified": "2024-01-01T00:00:00.000Z"}}
		    json.dump(doc, open("%s/meta/%s.json" % (root, n), "w"))
	EOF
}

# make_cargo: the crate phcrate 0.1.0 as a .crate made by hand
# ($T/reg/crates/dl/phcrate/0.1.0/download), a sparse index under
# $T/reg/crates/index/ and the same index as the git repository
# $T/git/crates-index.git (for a cargo without sparse support; served by
# start_git_server).
make_cargo() {
	local s=$T/src/crate/phcrate-0.1.0 sum line
	mkdir -p "$s/src" "$T/reg/crates/dl/phcrate/0.1.0" "$T/reg/crates/index/ph/cr"
	printf '[package]\nname = "phcrate"\nversion = "0.1.0"\nedition = "2018"\nlicense = "MIT"\ndescription = "test crate"\n' \
		>"$s/Cargo.toml"
	printf 'pub fn greeting() -> &'"'"'static str {\n    "hello from phcrate"\n}\n' >"$s/src/lib.rs"
	pad "$s/pad.bin"
	tar -C "$T/src/crate" --owner=0 --group=0 --numeric-owner \
		--mtime='2024-01-01' -czf "$T/reg/crates/dl/phcrate/0.1.0/download" \
		phcrate-0.1.0 || return 1
	sum=$(sha256sum "$T/reg/crates/dl/phcrate/0.1.0/download" | cut -d' ' -f1)
	line='{"name":"phcrate","vers":"0.1.0","deps":[],"cksum":"'$sum'","features":{},"yanked":false}'
	printf '%s\n' "$line" >"$T/reg/crates/index/ph/cr/phcrate"
	printf '{"dl":"https://crates.test:%s/dl","api":null}\n' "$REG_PORT" \
		>"$T/reg/crates/index/config.json"
	(
		git_env
		w=$T/src/crates-index
		git init -q -b master "$w" &&
			cp -r "$T/reg/crates/index/." "$w/" &&
			git -C "$w" add -A && git -C "$w" commit -q -m index &&
			git clone -q --bare "$w" "$T/git/crates-index.git"
	) >"$T/src/cargo-index.log" 2>&1 || { cat "$T/src/cargo-index.log"; return 1; }
}

# make_goproxy: the module example.test/greet v0.1.0 under $T/reg/go in
# the GOPROXY layout (@v/list, .info, .mod, .zip).
make_goproxy() {
	"$PY" - "$T/reg/go" <<-'EOF'
		import os, sys, zipfile
		mod, ver = "example.test/greet", "v0.1.0"
		d = "%s/%s/@v" % (sys.argv[1], mod)
		os.makedirs(d, exist_ok=True)
		gomod = "module %s\n\ngo 1.19\n" % mod
		src = 'package greet\n\nfunc Hello() string { return "hello from greet" }\n'
		open(d + "/list", "w").write(ver + "\n")
		open(d + "/%s.info" % ver, "w").write('{"Version":"%s","Time":"2024-01-01T00:00:00Z"}\n' % ver)
		open(d + "/%s.mod" % ver, "w").write(gomod)
		with zipfile.ZipFile(d + "/%s.zip" % ver, "w") as z:
		    z.writestr("%s@%s/go.mod" % (mod, ver), gomod)
		    z.writestr("%s@%s/greet.go" % (mod, ver), src)
		    pad = int(os.environ.get("REG_PAD") or 0)
		    if pad:
		        z.writestr("%s@%s/pad.bin" % (mod, ver), os.urandom(pad))
	EOF
}

# make_files: $T/reg/files/data.bin, 1 MB of random bytes, for curl/wget.
make_files() {
	mkdir -p "$T/reg/files"
	head -c 1000000 /dev/urandom >"$T/reg/files/data.bin"
}

# --- the server ---------------------------------------------------------------------

# reg_server HOST ROOT AUTH [EXTRA]: one server block of the registries'
# nginx.  AUTH is the whole Authorization value required (any, or none,
# when REG_OPEN is set: bench/bench_clients.sh's direct runs).
reg_server() {
	local auth="if (\$http_authorization != \"$3\") { return 401 \"token required\\n\"; }"
	[ -z "${REG_OPEN:-}" ] || auth=
	cat <<-EOF
		server {
			listen 127.0.0.1:$REG_PORT ssl;
			server_name $1;
			ssl_certificate $T/pypi.test.pem;
			ssl_certificate_key $T/pypi.test.key;
			root $2;
			index index.html;
			$auth
			${4:-}
		}
	EOF
}

# reg_port: the registries' port, chosen first: the make_* functions
# write URLs that name it.
# start_registries: one nginx over TLS on 127.0.0.1:$REG_PORT serving the
# registries made so far, each behind its token (TOK_*): Basic __token__
# for pypi.test, Bearer for npm.test, crates.test and files.test, Basic
# gouser for goproxy.test.  With REG_RATE set, each response is sent at
# that rate (nginx's limit_rate: the bench's stand-in for a real network).
reg_port() {
	[ -n "${REG_PORT:-}" ] || REG_PORT=$(rand_port)
}
start_registries() {
	TOK_PYPI=$(token pypi)
	TOK_NPM=$(token npm)
	TOK_CRATES=$(token crates)
	TOK_GO=$(token goproxy)
	TOK_FILES=$(token files)
	nginx_serve -k reg-nginx REG_NGINX_PID REG_PORT reg_conf
}
reg_conf() {
	local b64
	cat <<-EOF
		default_type application/octet-stream;
		types { text/html html; application/json json; }
		keepalive_requests 100000;
		${REG_RATE:+limit_rate $REG_RATE;}
	EOF
	b64=$(printf '__token__:%s' "$TOK_PYPI" | base64 -w0)
	reg_server pypi.test "$T/reg/pypi" "Basic $b64"
	reg_server npm.test "$T/reg/npm" "Bearer $TOK_NPM" '
		location ~ "^/([a-z0-9][a-z0-9._-]*)$" {
			default_type application/json;
			try_files /meta/$1.json =404;
		}'
	reg_server crates.test "$T/reg/crates" "Bearer $TOK_CRATES"
	b64=$(printf 'gouser:%s' "$TOK_GO" | base64 -w0)
	reg_server goproxy.test "$T/reg/go" "Basic $b64"
	reg_server files.test "$T/reg/files" "Bearer $TOK_FILES"
}

# reg_requests PATH-REGEX: how many requests the registries' nginx
# answered with 200 whose path matches (its access log).
reg_requests() {
	grep -cE "\"[A-Z]+ $1[^\"]*\" 200 " "$T/reg-nginx/access.log" 2>/dev/null || true
}

# --- the policy -----------------------------------------------------------------------

# cl_policy: $T/p.conf: the registries' names resolved to 127.0.0.1, each
# allowed with interception (the test CA trusted upstream) and its token
# injected; git.test too when start_git_server ran (token gh).
cl_policy() {
	{
		echo "secret pypi file $T/tok-pypi"
		echo "secret npm file $T/tok-npm"
		echo "secret crates file $T/tok-crates"
		echo "secret goproxy file $T/tok-goproxy"
		echo "secret files file $T/tok-files"
		for h in "${REG_HOSTS[@]}"; do echo "resolve $h 127.0.0.1"; done
		echo "allow pypi.test:$REG_PORT { private upstream-ca $T/ca.pem inject basic __token__ pypi }"
		echo "allow npm.test:$REG_PORT { private upstream-ca $T/ca.pem inject bearer npm }"
		echo "allow crates.test:$REG_PORT { private upstream-ca $T/ca.pem inject bearer crates }"
		echo "allow goproxy.test:$REG_PORT { private upstream-ca $T/ca.pem inject basic gouser goproxy }"
		echo "allow files.test:$REG_PORT { private upstream-ca $T/ca.pem inject bearer files }"
		if [ -n "${GIT_PORT:-}" ]; then
			echo "secret gh file $GIT_TOKEN_FILE"
			echo "resolve git.test 127.0.0.1"
			echo "allow git.test:$GIT_PORT { private upstream-ca $T/ca.pem inject basic x-access-token gh }"
			printf '%s\n' "$GIT_TOKEN" >>"$T/tokens"
		fi
	} >"$T/p.conf"
}

# reg_direct_ok NAME HOST PATH AUTH: the registry answers
# https://HOST:$REG_PORT/PATH with AUTH and refuses it without (checked
# outside the sandbox, so that a failure later is the client's or
# pinhole's, not the server's).
reg_direct_ok() {
	local with without c=(curl -sS -o /dev/null -w '%{http_code}'
		--cacert "$T/ca.pem" --resolve "$2:$REG_PORT:127.0.0.1")
	with=$("${c[@]}" -H "Authorization: $4" "https://$2:$REG_PORT/$3" 2>&1)
	without=$("${c[@]}" "https://$2:$REG_PORT/$3" 2>&1)
	equal "$1: the registry serves with its token" "$with" 200
	equal "$1: the registry refuses without" "$without" 401
}
