#!/usr/bin/env bash
# git.sh: git clone and push over smart HTTP (git-http-backend behind
# nginx, Basic auth), and curl and wget GETs of a file, inside `pinhole
# run`; every server requires a token that pinhole injects and the
# sandbox never holds.  The user names only the URLs; the scratch home's
# ~/.gitconfig gives the identity of the commit.
# usage: git.sh PATH-TO-PINHOLE
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/tls_lib.sh"
. "$(dirname "$0")/lib.sh"
cl_begin git nginx fcgiwrap git curl wget openssl jq
reg_port
make_files || exit 1
start_registries || exit 1
start_git_server || exit 1
cl_policy
reg_direct_ok files files.test data.bin "Bearer $TOK_FILES"
W=$T/work
mkdir -p "$W"
URL=https://git.test:$GIT_PORT/allowed.git
home_snapshot before

# --- git ------------------------------------------------------------------------
# Clone, commit and push in one run: pinhole's git guard quarantines the
# .git/config a run writes when the run ends, so a later run would have
# no "origin".
cl_run -- sh -c "git clone -q '$URL' && cd allowed && echo 'from the sandbox' >pushed.txt &&
	git add pushed.txt && git commit -q -m 'commit from the sandbox' &&
	git push -q origin HEAD:main"
run_ok "git clone, commit, push"
check "git clone: the repository's file" grep -q '^allowed repository$' "$W/allowed/README"
audit_saw "git clone" git.test '^/allowed\.git/info/refs$' gh
audit_saw "git clone" git.test '^/allowed\.git/git-upload-pack$' gh
check "git push: the commit reached the server" sh -c \
	"git --git-dir='$T/git/allowed.git' log -1 --format=%s main | grep -qx 'commit from the sandbox'"
check "git push: the author from ~/.gitconfig" sh -c \
	"git --git-dir='$T/git/allowed.git' log -1 --format=%ae main | grep -qx 'user@example.test'"
audit_saw "git push" git.test '^/allowed\.git/git-receive-pack$' gh

# A second run pushes to the URL (its origin is gone, see above).
cl_run -- sh -c "cd allowed && echo again >>pushed.txt && git commit -q -am 'second push' &&
	git push -q '$URL' HEAD:main"
run_ok "git push in a second run"
check "git push in a second run: the commit reached the server" sh -c \
	"git --git-dir='$T/git/allowed.git' log -1 --format=%s main | grep -qx 'second push'"

# --- curl and wget --------------------------------------------------------------
F=https://files.test:$REG_PORT/data.bin
cl_run -- curl -sS -f -o curl.bin "$F"
run_ok "curl"
check "curl: the file's bytes" cmp -s "$W/curl.bin" "$T/reg/files/data.bin"
cl_run -- wget -q -O wget.bin "$F"
run_ok "wget"
check "wget: the file's bytes" cmp -s "$W/wget.bin" "$T/reg/files/data.bin"
n=$(jq -c 'select(.event == "end" and .host == "files.test" and .path == "/data.bin" and .status == 200 and .secret == "files" and .bytes_down >= 1000000)' \
	"$T/audit.jsonl" | wc -l)
equal "curl, wget: audit log: two GETs of data.bin, 1 MB down each, secret files" "$n" 2

audit_clean git
home_unchanged before git
ph_end
