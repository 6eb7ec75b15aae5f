#!/usr/bin/env bash
# Scenario: the sandbox's home (netns/mount.c, netns/cache.c,
# cli/run_cache.c).  Shell commands stand in for npm, cargo, go, pyenv
# and a user's dotfiles: they write into the home and succeed, and the
# host's home is byte for byte what it was (sizes, modes, mtimes, links,
# content hashes); the tool caches come back in a second run with the
# same policy, the other writes do not; --no-cache starts empty;
# --cache DIR keeps them in DIR; the cache directory is not visible
# inside; hidden credential files stay empty and the git guards hold
# through the overlay; a user with no home gets a fresh one; without an
# overlay the home stays read-only, said; --tmpfs of
# a missing path works in the home and says what to do on the read-only /.
# usage: run_home.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin run_home git find sha256sum
H=$T/home
W=$T/work
mkdir -p "$H/.cargo" "$H/.ssh" "$H/.pyenv/shims" "$H/.cache/pip" \
	"$H/.cache/pinhole" "$H/.npm" "$W"
chmod 700 "$H" "$H/.cache/pinhole"
echo 'echo host bashrc' >"$H/.bashrc"
printf '[net]\nretry = 1\n' >"$H/.cargo/config.toml"
printf '[user]\n\tname = Home Test\n' >"$H/.gitconfig"
echo 'ssh-ed25519 KEY' >"$H/.ssh/id_ed25519"
echo '//registry.test/:_authToken=NPMSECRET' >"$H/.npmrc"
echo 'host wheel' >"$H/.cache/pip/host.whl"
echo 'host npm' >"$H/.npm/host-entry"
printf '#!/bin/sh\necho host shim\n' >"$H/.pyenv/shims/python"
chmod 755 "$H/.pyenv/shims/python"
export HOME=$H
unset XDG_CACHE_HOME
re() { sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }

# Everything under the home but pinhole's own cache directory.
snapshot() {
	(cd "$H" && find . -path ./.cache/pinhole -prune -o \
		-printf '%p %s %m %U %G %T@ %y %l\n' | LC_ALL=C sort &&
		find . -path ./.cache/pinhole -prune -o -type f \
			-exec sha256sum {} + | LC_ALL=C sort)
}
before=$(snapshot)

tools='
	mkdir -p ~/.npm/_cacache/content-v2 &&
		echo npm-data >~/.npm/_cacache/content-v2/a && echo npm-ok
	mkdir -p ~/.cargo/registry/cache &&
		echo crate >~/.cargo/registry/cache/c.crate && echo cargo-ok
	mkdir -p ~/go/pkg/mod/cache/download &&
		echo mod >~/go/pkg/mod/cache/download/m.zip && echo go-ok
	mkdir -p ~/.cache/pip && echo wheel >~/.cache/pip/w.whl && echo pip-ok
	echo "#!/bin/sh" >~/.pyenv/shims/pip && echo shims-ok
	echo planted >>~/.bashrc && echo bashrc-ok
	echo new >~/.newdot && echo newdot-ok
	echo x >>~/.cargo/config.toml && echo cargo-config-ok'
look='
	echo "HOME=$HOME"
	for f in .npm/_cacache/content-v2/a .cargo/registry/cache/c.crate \
		go/pkg/mod/cache/download/m.zip .cache/pip/w.whl \
		.pyenv/shims/pip .newdot .npm/host-entry .cache/pip/host.whl; do
		[ -e ~/$f ] && echo "seen $f"
	done
	grep -c planted ~/.bashrc
	echo "cache: $(ls -A ~/.cache | tr "\n" " ")"'

# --- a first run: the tools write -------------------------------------------
prun -a example.test -- sh -c "$tools
	cat ~/.gitconfig; head -1 ~/.cargo/config.toml
	echo \"npmrc \$(wc -c <~/.npmrc)\"; echo \"ssh \$(ls -A ~/.ssh | wc -l)\"
	echo \"pinhole-cache \$(ls -A ~/.cache/pinhole 2>/dev/null | wc -l)\"
	$look"
equal "first run: status" "$RC" 0
for t in npm cargo go pip shims bashrc newdot cargo-config; do
	expect "first run: $t write succeeds" "$OUT" "^$t-ok\$"
done
expect "first run: HOME is the home" "$OUT" "^HOME=$H\$"
expect "first run: dotfiles readable" "$OUT" 'name = Home Test'
expect "first run: tool configuration readable" "$OUT" '^\[net\]$'
expect "first run: ~/.npmrc hidden (empty)" "$OUT" '^npmrc 0$'
expect "first run: ~/.ssh hidden (empty)" "$OUT" '^ssh 0$'
expect "first run: the cache directory is not seen" "$OUT" '^pinhole-cache 0$'
refuse "first run: the host's npm cache is not the sandbox's" "$OUT" \
	'^seen .npm/host-entry$'
expect "first run: ~/.cache is the sandbox's own" "$OUT" '^cache: pip $'
equal "first run: the host's home is unchanged" "$(snapshot)" "$before"
keydir=$(find "$H/.cache/pinhole" -mindepth 1 -maxdepth 1 -type d)
equal "one cache directory, per policy" "$(printf '%s\n' "$keydir" | wc -l)" 1
expect "its name starts with what the policy is" "$keydir" '/allow-[0-9a-f]{16}$'
equal "the cache directory is 0700" "$(stat -c %a "$keydir")" 700
equal "the cache directory is the user's" "$(stat -c %u "$keydir")" "$(id -u)"
check "the npm cache is kept outside" test -s "$keydir/npm/_cacache/content-v2/a"
check "cargo's registry is kept outside" test -s "$keydir/cargo-registry/cache/c.crate"
check "the module cache is kept outside" test -s "$keydir/go-mod/cache/download/m.zip"
check "the XDG cache is kept outside" test -s "$keydir/xdg-cache/pip/w.whl"

# --- a second run with the same policy: the caches, nothing else -----------
prun -a example.test -- sh -c "$look"
equal "second run: status" "$RC" 0
for f in .npm/_cacache/content-v2/a .cargo/registry/cache/c.crate \
	go/pkg/mod/cache/download/m.zip .cache/pip/w.whl; do
	expect "second run: cached $f seen" "$OUT" "^seen $(re "$f")\$"
done
for f in .pyenv/shims/pip .newdot; do
	refuse "second run: $f was the first run's only" "$OUT" "^seen $(re "$f")\$"
done
expect "second run: ~/.bashrc is the host's" "$OUT" '^0$'
equal "second run: the host's home is unchanged" "$(snapshot)" "$before"

# What an earlier run left in its cache cannot stop the next: a link
# where the host's cache directory would be, seen from inside.
ln -s /etc "$keydir/xdg-cache/pinhole"
prun -a example.test -- sh -c 'ls ~/.cache/pinhole/ | grep -cx passwd'
equal "a planted link in the cache: the run goes on" "$RC" 0
expect "a planted link in the cache: it is only the sandbox's own" "$OUT" '^1$'
rm "$keydir/xdg-cache/pinhole"

# Another policy: another cache.
prun -a other.test -- sh -c "$look"
equal "another policy: status" "$RC" 0
refuse "another policy: another cache" "$OUT" '^seen .npm/'

# --- --no-cache, --cache DIR ------------------------------------------------
prun -a example.test --no-cache -- sh -c "$tools; $look"
equal "--no-cache: status" "$RC" 0
expect "--no-cache: npm writes" "$OUT" '^npm-ok$'
equal "--no-cache: the kept cache is untouched" \
	"$(ls "$keydir/npm/_cacache/content-v2")" a
prun -a example.test --no-cache -- sh -c "$look"
refuse "--no-cache: nothing seen" "$OUT" '^seen '
expect "--no-cache: ~/.cache empty" "$OUT" '^cache: $'

C=$T/cachedir
prun -a example.test --cache "$C" -- sh -c "$tools; ls -A $C 2>/dev/null | wc -l"
equal "--cache DIR: status" "$RC" 0
check "--cache DIR: the npm cache in DIR" test -s "$C/npm/_cacache/content-v2/a"
equal "--cache DIR: made 0700" "$(stat -c %a "$C")" 700
expect "--cache DIR: not visible inside" "$OUT" '^0$'
prun -a example.test --cache "$C" -- sh -c "$look"
expect "--cache DIR: the second run sees it" "$OUT" '^seen .cargo/registry/cache/c.crate$'
ln -s "$C" "$T/cachelink"
prun -a example.test --cache "$T/cachelink" -- true
equal "--cache through a symbolic link: refused" "$RC" 125
expect "--cache through a symbolic link: why" "$ERR" 'symbolic link'
prun -a example.test --cache "$C" --no-cache -- true
equal "--cache and --no-cache: refused" "$RC" 125
equal "every run: the host's home is unchanged" "$(snapshot)" "$before"

# Variables that move a cache are honoured (the sandbox's: --setenv).
prun -a example.test --setenv GOMODCACHE "$H/gomod" --setenv CARGO_HOME "$H/cargo" \
	-- sh -c 'echo m >"$GOMODCACHE/x" && echo c >"$CARGO_HOME/registry/y" && echo moved-ok'
expect "moved caches: written" "$OUT" '^moved-ok$'
check "GOMODCACHE: kept in the cache" test -s "$keydir/go-mod/x"
check "CARGO_HOME: kept in the cache" test -s "$keydir/cargo-registry/y"
check "moved caches: nothing in the host's home" test ! -e "$H/gomod" -a ! -e "$H/cargo"

# XDG_CACHE_HOME outside the home: there, and hidden inside.
X=$T/xdg
XDG_CACHE_HOME=$X prun -a example.test -- sh -c "echo y >~/.npm/y; ls -A $X/pinhole | wc -l"
equal "XDG_CACHE_HOME: status" "$RC" 0
check "XDG_CACHE_HOME: the cache there" test -s "$(ls -d "$X"/pinhole/allow-*)/npm/y"
expect "XDG_CACHE_HOME: hidden inside" "$OUT" '^0$'

# --- the work directory under the home; git guards ------------------------
P=$H/proj
mkdir -p "$P"
git -C "$P" init -q
W=$P prun -a example.test -- sh -c '
	echo kept >out.txt && echo cwd-ok
	echo "#!/bin/sh" >.git/hooks/post-checkout 2>/dev/null || echo hooks-refused
	git config core.hooksPath /tmp 2>/dev/null || echo config-refused
	echo x >>~/.bashrc && echo home-ok'
equal "under the home: status" "$RC" 0
expect "under the home: the work directory writes" "$OUT" '^cwd-ok$'
check "under the home: the file reached the host" test -s "$P/out.txt"
expect "under the home: hooks read-only" "$OUT" '^hooks-refused$'
expect "under the home: .git/config read-only" "$OUT" '^config-refused$'
expect "under the home: the home still writable" "$OUT" '^home-ok$'
check "under the home: ~/.bashrc untouched" \
	test "$(cat "$H/.bashrc")" = 'echo host bashrc'
rm -rf "$P"
W=$T/work
before=$(snapshot) # the home's own mtime: the test made and removed proj

# --- no home ---------------------------------------------------------------
HOME=/nonexistent XDG_CACHE_HOME=$X prun -a example.test -- sh -c '
	echo "HOME=$HOME"; touch ~/.profile && echo fresh-ok; ls -ld ~ | cut -c1-10'
equal "no home: status" "$RC" 0
expect "no home: a fresh one" "$OUT" '^HOME=/tmp/pinhole-home$'
expect "no home: writable" "$OUT" '^fresh-ok$'
expect "no home: private" "$OUT" '^drwx------$'

# No overlay: a home overlayfs refuses as its lower layer (procfs) stays
# the host's, read-only, and the run says so.
HOME=/proc/sys XDG_CACHE_HOME=$X prun -a example.test -- sh -c '
	echo "HOME=$HOME"; touch ~/x 2>/dev/null || echo read-only'
equal "no overlay: status" "$RC" 0
expect "no overlay: the home stays read-only" "$OUT" '^read-only$'
expect "no overlay: said" "$ERR" 'the home /proc/sys stays read-only, with no tool cache: overlayfs'

# --- --tmpfs on a missing path ----------------------------------------------
prun -a example.test --tmpfs "$H/not/there" -- sh -c "touch $H/not/there/f && echo tmpfs-ok"
expect "--tmpfs in the home: made" "$OUT" '^tmpfs-ok$'
check "--tmpfs in the home: nothing outside" test ! -e "$H/not"
missing=/usr/ph-run-home-$$
prun -a example.test --tmpfs "$missing" -- true
equal "--tmpfs on the read-only /: refused" "$RC" 125
expect "--tmpfs on the read-only /: what to do" "$ERR" "mkdir -p $missing"
check "--tmpfs on the read-only /: nothing made" test ! -e "$missing"
equal "at the end: the host's home is unchanged" "$(snapshot)" "$before"
ph_end
