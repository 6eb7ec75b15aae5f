#!/usr/bin/env bash
# Client: apt.  apt-get update and apt-get download inside `pinhole run`,
# with no option for pinhole's sake, from a signed Debian repository (a
# .deb built here, apt-ftparchive, a throwaway gpg key) that nginx serves
# over TLS on loopback and that requires a Basic credential pinhole
# injects.  The user only points apt at the repository (sources.list, its
# key) -- the _apt sandbox user, the read-only /var/lib/apt and
# /var/cache/apt and the run CA are pinhole's business.  The .deb arrives,
# the audit log has the requests, the host's apt state and the scratch
# $HOME are unchanged.
# usage: apt.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
ph_begin apt nginx openssl jq gpg gpgv dpkg-deb apt-ftparchive apt-get
gen_host_cert deb.test || exit 1
W=$T/work
mkdir -p "$W"

# --- the package and the signed repository ------------------------------------
R=$T/repo
mkdir -p "$T/pkg/DEBIAN" "$T/pkg/usr/share/doc/hello-pinhole" "$R"
cat >"$T/pkg/DEBIAN/control" <<EOC
Package: hello-pinhole
Version: 1.0
Architecture: all
Maintainer: pinhole tests <tests@pinhole.test>
Description: the package of pinhole's apt client test
EOC
echo "hello from the sandbox's apt" >"$T/pkg/usr/share/doc/hello-pinhole/README"
dpkg-deb --root-owner-group -Zgzip --build "$T/pkg" "$R/hello-pinhole_1.0_all.deb" \
	>"$T/deb.log" 2>&1 || { cat "$T/deb.log"; exit 1; }
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --passphrase '' --quick-gen-key 'pinhole apt test <apt@pinhole.test>' \
	ed25519 sign 1d >"$T/gpg.log" 2>&1 || { cat "$T/gpg.log"; exit 1; }
(cd "$R" && apt-ftparchive packages . >Packages && gzip -k -9 Packages &&
	apt-ftparchive -o APT::FTPArchive::Release::Origin=pinhole-test \
		release . >Release) >"$T/ftparchive.log" 2>&1 ||
	{ cat "$T/ftparchive.log"; exit 1; }
if ! gpg --batch --yes --clearsign -o "$R/InRelease" "$R/Release" \
	>>"$T/gpg.log" 2>&1 || ! gpg --batch --export >"$W/repo.gpg" 2>>"$T/gpg.log"; then
	cat "$T/gpg.log"
	exit 1
fi
gpgconf --kill all >/dev/null 2>&1
unset GNUPGHOME

# --- nginx: TLS, and a Basic credential the sandbox never holds ---------------
APT_TOKEN=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
(umask 077 && printf '%s\n' "$APT_TOKEN" >"$T/apt-token")
printf 'apt:%s\n' "$(printf '%s\n' "$APT_TOKEN" | openssl passwd -apr1 -stdin)" \
	>"$T/htpasswd"
start_deb_server() {
	nginx_serve deb-nginx DEB_NGINX_PID DEB_PORT deb_conf
}
deb_conf() {
	cat <<-EOF
		default_type application/octet-stream;
		server {
			listen 127.0.0.1:$DEB_PORT ssl;
			server_name deb.test;
			ssl_certificate $T/deb.test.pem;
			ssl_certificate_key $T/deb.test.key;
			root $R;
			auth_basic "debian";
			auth_basic_user_file $T/htpasswd;
		}
	EOF
}
start_deb_server || exit 1
URL=https://deb.test:$DEB_PORT

# Without the credential the repository refuses (it needs pinhole's).
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/ca.pem" \
	--resolve "deb.test:$DEB_PORT:127.0.0.1" "$URL/InRelease")
equal "the repository wants a credential" "$code" 401

cat >"$T/p.conf" <<EOC
secret apt-token file $T/apt-token
resolve deb.test 127.0.0.1
allow deb.test:$DEB_PORT { private upstream-ca $T/ca.pem inject basic apt apt-token }
EOC
# What a user writes to use this repository at all.
echo "deb [signed-by=$W/repo.gpg] $URL/ ./" >"$W/sources.list"
APT=(apt-get -q -o "Dir::Etc::SourceList=$W/sources.list"
	-o Dir::Etc::SourceParts=/nonexistent)

# --- what must not change -----------------------------------------------------
H=$T/home
mkdir -p "$H/.config/apt" "$H/.cache"
echo 'export PS1=x' >"$H/.bashrc"
echo '# apt.sh scratch profile' >"$H/.profile"
echo 'user dotfile' >"$H/.config/apt/note"
# snapshot DIR...: every entry's path, type, mode, size and contents.
snapshot() {
	find "$@" -xdev \( -type f -o -type d -o -type l \) \
		-printf '%p %y %m %s %T@\n' 2>/dev/null | LC_ALL=C sort
	find "$@" -xdev -type f -readable -exec md5sum {} + 2>/dev/null |
		LC_ALL=C sort
}
home_before=$(snapshot "$H")
host_before=$(snapshot /var/lib/apt /var/cache/apt)

# --- apt-get update && apt-get download -----------------------------------------
HOME=$H prun -p "$T/p.conf" -- sh -c "
	${APT[*]} update && ${APT[*]} download hello-pinhole && echo downloaded"
equal "apt: status" "$RC" 0
expect "apt: downloaded" "$OUT" '^downloaded$'
expect "apt update: fetched the signed index" "$OUT" "Get:.* $URL \./ InRelease"
refuse "apt: no sandbox-user failure" "$OUT$ERR" 'setgroups|has died unexpectedly'
refuse "apt: no warning" "$OUT$ERR" '^(W|E): '
check "the .deb arrived" test -s "$W/hello-pinhole_1.0_all.deb"
check "the .deb is the repository's" cmp -s "$W/hello-pinhole_1.0_all.deb" \
	"$R/hello-pinhole_1.0_all.deb"
jq_has() { [ -n "$(jq -c "$1" "$2" 2>/dev/null)" ]; }
check "audit: InRelease fetched with the credential" jq_has \
	'select(.event == "end" and .path == "/InRelease" and .status == 200 and .secret == "apt-token")' \
	"$T/audit.jsonl"
check "audit: the index fetched" jq_has \
	'select(.event == "end" and (.path | test("^/Packages")) and .status == 200)' \
	"$T/audit.jsonl"
check "audit: the .deb fetched" jq_has \
	'select(.event == "end" and .path == "/hello-pinhole_1.0_all.deb" and .status == 200 and .secret == "apt-token")' \
	"$T/audit.jsonl"
check "audit: nothing denied" test -z "$(jq -c 'select(.decision == "deny")' "$T/audit.jsonl")"
if grep -q -- "$APT_TOKEN" "$T/audit.jsonl" "$W"/* 2>/dev/null; then
	bad "the token's value is in the log or the work directory"
else ok; fi
equal "the scratch home is unchanged" "$(snapshot "$H")" "$home_before"
equal "the host's /var/lib/apt and /var/cache/apt are unchanged" \
	"$(snapshot /var/lib/apt /var/cache/apt)" "$host_before"

# --- the user's own APT_CONFIG still counts -----------------------------------
# It is read first, as apt would: a setting of its own shows, and the
# sandbox user stays root.
printf 'Pinhole::Test::Mine "from-the-user";\nAPT::Sandbox::User "_apt";\n' \
	>"$W/my-apt.conf"
prun -p "$T/p.conf" --setenv APT_CONFIG "$W/my-apt.conf" -- sh -c \
	"apt-config dump | grep -e '^Pinhole::Test::Mine' -e '^APT::Sandbox::User'
	${APT[*]} update >/dev/null && echo updated"
expect "user APT_CONFIG: its setting" "$OUT" '^Pinhole::Test::Mine "from-the-user";$'
expect "user APT_CONFIG: the sandbox user stays root" "$OUT" '^APT::Sandbox::User "root";$'
expect "user APT_CONFIG: update works" "$OUT" '^updated$'
equal "the host's apt state is still unchanged" \
	"$(snapshot /var/lib/apt /var/cache/apt)" "$host_before"

ph_end
