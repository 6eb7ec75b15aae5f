#!/usr/bin/env bash
# Installs the Debian 12 packages pinhole needs to build, test and fuzz.
# Runs apt-get only when something is missing, so repeated runs are quick.
set -euo pipefail

PACKAGES=(
	build-essential cmake pkg-config	# compiler and build system
	libevent-dev				# event loop of the proxy
	libssl-dev				# TLS, per-run CA (OpenSSL 3)
	libc-ares-dev				# asynchronous DNS in the proxy
	libnl-3-dev libnl-route-3-dev		# netlink: lo up in the sandbox
	libseccomp-dev				# seccomp filter of the sandbox
	libjansson-dev				# JSON: audit log write and review
	libcmocka-dev				# unit tests
	clang libclang-rt-dev			# libFuzzer targets
	clang-format				# style check in the test command
	groff-base man-db			# man page rendering check
	curl git				# clients for integration tests
	nginx dnsmasq socat jq openssl		# servers and tools the tests start
	netcat-openbsd python3			# proxy_socks.sh: nc -X 5, raw SOCKS bytes
	fcgiwrap				# git-http-backend behind nginx
	libcap2-bin				# setcap: the escape scenarios' file caps
	iputils-ping busybox			# escape_net.sh: real pings, refused (and logged)
	systemd apparmor fakeroot		# install.sh: systemd-analyze verify, apparmor_parser, dpkg --root as a user
)
# gcc -m32: the i386 prober of the escape scenarios (x86_64 only).
if [ "$(dpkg --print-architecture)" = amd64 ]; then
	PACKAGES+=(gcc-multilib)
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
