#!/usr/bin/env bash
# pip.sh: pip (Debian's python3 -m venv, made in the project directory)
# inside `pinhole run` installs and downloads from a PyPI simple index
# (PEP 503, two wheels: phbeta requires phalpha) that requires a token
# pinhole injects; the user names only the index URL.
# usage: pip.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/lib.sh"
cl_begin pip nginx curl openssl jq /usr/bin/python3
reg_port
make_pypi || exit 1
start_registries || exit 1
cl_policy
reg_direct_ok pypi pypi.test simple/phbeta/ \
	"Basic $(printf '__token__:%s' "$TOK_PYPI" | base64 -w0)"
W=$T/work
mkdir -p "$W"
"$PY" -m venv "$W/venv" || { bad "python3 -m venv"; ph_end; }
INDEX=https://pypi.test:$REG_PORT/simple/
home_snapshot before

cl_run -- venv/bin/pip install --index-url "$INDEX" phbeta
run_ok "pip install"
check "pip install: phbeta and phalpha import in the venv" \
	"$W/venv/bin/python" -c 'import phalpha, phbeta; assert phbeta.VALUE == "hello from phbeta"'
audit_saw "pip install" pypi.test '^/simple/phbeta/$' pypi
audit_saw "pip install" pypi.test '^/simple/phalpha/$' pypi
audit_saw "pip install" pypi.test '^/packages/phalpha-1\.0-py3-none-any\.whl$' pypi

cl_run -- venv/bin/pip download --index-url "$INDEX" -d dl phbeta
run_ok "pip download"
check "pip download: both wheels" test -s "$W/dl/phbeta-1.0-py3-none-any.whl" -a \
	-s "$W/dl/phalpha-1.0-py3-none-any.whl"
check "pip download: the bytes of the registry" \
	cmp -s "$W/dl/phbeta-1.0-py3-none-any.whl" "$T/reg/pypi/packages/phbeta-1.0-py3-none-any.whl"
audit_saw "pip download" pypi.test '^/packages/phbeta-1\.0-py3-none-any\.whl$' pypi

audit_clean pip
home_unchanged before pip
ph_end
