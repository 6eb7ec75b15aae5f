#!/usr/bin/env bash
# Escape probe: git plants that would run code outside after the run.
# Each plant is made inside `pinhole run`; then, outside, git status,
# diff, log (with a pager, on a pty), commit (hooks, editor) run in the
# work directory and in the planted or registered repository, with every
# planted command writing a marker file; no marker may appear.  Each
# plant is also made with --allow-git-config (no guard, no sweep): there
# its markers must appear, which shows that the plant works and that the
# check can fail.  Then: a guard that cannot be set up (.git/hooks a
# dangling symbolic link) stops the run with 125 naming it, and a plant
# that cannot be reached (past the sweep's depth bound) ends the run with
# 123 and says so, though the command exited 0.
# usage: escape_git.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_git git script timeout
M=$T/markers
mkdir -p "$M" "$T/home"
export HOME=$T/home GIT_CONFIG_NOSYSTEM=1 EDITOR=false VISUAL=false PAGER=cat
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.test GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@t.test
git config --global protocol.file.allow always
git config --global init.defaultBranch main
git config --global user.name t
git config --global user.email t@t.test

# fresh NAME: a repository with one commit at $T/NAME, in W.
fresh() {
	W=$T/$1
	rm -rf "$W"
	git init -q "$W" && echo one >"$W/f" && git -C "$W" add f &&
		git -C "$W" commit -qm one
}

# outside DIR...: what the user types later, in each DIR.
outside() {
	local d
	for d in "$@"; do
		(
			cd "$d" || exit
			git status
			git diff
			git log -1
			timeout 20 script -qec "git log -1" /dev/null </dev/null
			echo x >>f 2>/dev/null
			git commit -qam probe
			git commit -q --allow-empty
		) >/dev/null 2>&1
	done
}

markers() { ls -A "$M" | tr '\n' ' '; }

# Shell code run inside: makes a copy of .git at $1 whose config and
# hooks write markers named $2-*, a common directory or git directory
# for git to be led to.
evil_gitdir() {
	cat <<EOF
cp -r .git "$1" && rm -rf "$1/hooks" && mkdir "$1/hooks" &&
git config -f "$1/config" core.fsmonitor "touch $M/$2-fsmonitor; false" &&
git config -f "$1/config" core.pager "touch $M/$2-pager; cat" &&
git config -f "$1/config" core.editor "touch $M/$2-editor; false" &&
printf '#!/bin/sh\ntouch $M/$2-hook\n' >"$1/hooks/pre-commit" &&
chmod +x "$1/hooks/pre-commit" &&
EOF
}

# probe NAME SETUP PLANT DIR...: SETUP (a function) prepares $W outside,
# PLANT runs inside; then outside() in each DIR (relative to $W or
# absolute), guarded and with --allow-git-config.
probe() {
	local name=$1 setup=$2 code=$3 plant mode d dirs
	shift 3
	for mode in guard control; do
		fresh "$name-$mode" && "$setup" "$mode" || {
			bad "$name: setup"
			return
		}
		# The sandbox has a /tmp of its own: no global git config.
		plant="export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.test \
GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t.test; $code"
		if [ "$mode" = guard ]; then
			prun -- sh -c "$plant"
		else
			prun --allow-git-config -- sh -c "$plant"
		fi
		equal "$name ($mode): the command" "$OUT" planted
		rm -f "$M"/*
		dirs=()
		for d in "$@"; do
			case $d in /*) dirs+=("$d-$mode") ;; *) dirs+=("$W/$d") ;; esac
		done
		outside "${dirs[@]}"
		if [ "$mode" = guard ]; then
			equal "$name: status" "$RC" 0
			expect "$name: said what was moved" "$ERR" \
				'^pinhole: git guard: .* is new or changed since the run started, and git would read it; moved to [^/]*\.pinhole-quarantine-[0-9a-f]{16}$'
			equal "$name: nothing planted ran outside" "$(markers)" ""
		else
			refuse "$name (control): markers appear" "$(markers)" '^$'
		fi
	done
}

none() { :; }

# --- commondir, with its old fixed quarantine name taken ----------------------
probe commondir none "mkdir -p .git/commondir.pinhole-quarantine/full &&
$(evil_gitdir "\$PWD/evil" commondir)
echo \"\$PWD/evil\" >.git/commondir && echo planted" .

# --- config.worktree (the user turned extensions.worktreeConfig on) -----------
wtconfig() { git -C "$W" config extensions.worktreeConfig true; }
probe config.worktree wtconfig "mkdir -p .git/config.worktree.pinhole-quarantine/full &&
git config -f .git/config.worktree core.fsmonitor 'touch $M/cw-fsmonitor; false' &&
git config -f .git/config.worktree core.pager 'touch $M/cw-pager; cat' &&
echo planted" .

# --- a nested repository registered as a gitlink in the index -----------------
probe nested none "git init -q vendor/lib &&
git -C vendor/lib commit -q --allow-empty -m x &&
git update-index --add --cacheinfo 160000,\$(git -C vendor/lib rev-parse HEAD),vendor/lib &&
git -C vendor/lib config core.fsmonitor 'touch $M/nested-fsmonitor; false' &&
git -C vendor/lib config core.pager 'touch $M/nested-pager; cat' &&
printf '#!/bin/sh\ntouch $M/nested-hook\n' >vendor/lib/.git/hooks/pre-commit &&
chmod +x vendor/lib/.git/hooks/pre-commit && echo planted" . vendor/lib

# --- a real submodule: .git/modules/sub/config and hooks; .gitmodules ---------
submodule() {
	rm -rf "$T/subsrc" && fresh_sub=$T/subsrc &&
		git init -q "$fresh_sub" && git -C "$fresh_sub" commit -q --allow-empty -m s &&
		git -C "$W" submodule -q add "$fresh_sub" sub >/dev/null 2>&1 &&
		git -C "$W" commit -qm sub
}
probe submodule submodule "git -C sub config core.fsmonitor 'touch $M/mod-fsmonitor; false' &&
git -C sub config core.pager 'touch $M/mod-pager; cat' &&
printf '#!/bin/sh\ntouch $M/mod-hook\n' >.git/modules/sub/hooks/pre-commit &&
chmod +x .git/modules/sub/hooks/pre-commit &&
git config -f .gitmodules submodule.sub.update '!touch $M/gitmodules-update' &&
echo planted" . sub
# update = !cmd in .gitmodules (left there by the control run): git
# refuses it (CVE-2019-19604), even when the submodule must be checked
# out again.
rm -f "$M"/*
gm=$(cd "$W" && rm -rf sub && mkdir sub &&
	git submodule update --init 2>&1 >/dev/null)
equal ".gitmodules update = !cmd: git does not run it" "$(markers)" ""
expect ".gitmodules update = !cmd: git refuses it" "$gm" "invalid value for 'submodule\.sub\.update'"

# --- a linked worktree (outside the work directory): worktrees/*/commondir ----
worktree() { git -C "$W" worktree add -q "$T/wt-$1" 2>/dev/null; }
probe worktrees worktree "$(evil_gitdir "\$PWD/evil" wt)
for w in .git/worktrees/*; do echo \"\$PWD/evil\" >\$w/commondir; done &&
echo planted" "$T/wt"

# --- a new .git file (gitdir: ...) in a subdirectory --------------------------
probe gitfile none "mkdir d && $(evil_gitdir "\$PWD/evil" gitfile)
echo \"gitdir: \$PWD/evil\" >d/.git && echo planted" d

# --- a bare repository made in a subdirectory ---------------------------------
probe bare none "$(evil_gitdir "\$PWD/b" bare) echo planted" b

# --- a guard that cannot be set up stops the run ------------------------------
fresh dangling
rm -rf "$W/.git/hooks" && ln -s "$T/nowhere" "$W/.git/hooks"
prun -- sh -c 'echo ran'
equal "dangling .git/hooks: refused" "$RC" 125
refuse "dangling .git/hooks: the command did not run" "$OUT" 'ran'
expect "dangling .git/hooks: says which guard and why" "$ERR" \
	'git guard .*/\.git/hooks: a symbolic link, which a guard cannot pin'

# --- what cannot be reached fails the run, whatever the command's status ------
fresh deep
prun -- sh -c 'd=.; i=0; while [ $i -lt 260 ]; do d=$d/d; i=$((i + 1)); done
mkdir -p "$d" && echo "gitdir: /nowhere" >"$d/.git" && echo planted'
equal "past the depth bound: status 123" "$RC" 123
expect "past the depth bound: says so" "$ERR" \
	'^pinhole: git guard: cannot neutralise: more than 256 directories deep at .*/d/d/d'
expect "past the depth bound: the command's status is told" "$ERR" \
	'exit status 123 instead of the command.s 0$'

ph_end
