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
	openjdk-17-jdk-headless			# Java HttpClient, javac, jar, keytool (java.sh)
	maven					# mvn 3.8.7 (java.sh)
	libmaven-dependency-plugin-java		# the plugin java.sh serves to mvn from its local repository
	junit4					# junit:junit:4.x, which Debian's POMs of that plugin's dependencies name
)

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
echo "deps-clients: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
