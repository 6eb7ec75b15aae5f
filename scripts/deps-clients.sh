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
	python3-venv python3-pip		# pip in a venv
	golang-go				# go mod download against a GOPROXY
	cargo					# cargo fetch/build (Debian's: a git index;
						# a cargo >= 1.68 on PATH: the sparse index)
	nginx fcgiwrap git jq curl openssl	# the registries' server, git smart HTTP, audit checks
	nodejs					# node for npm
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
# npm: part of NodeSource's nodejs, a package of its own in Debian's.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
echo "deps-clients: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
