#!/usr/bin/env bash
# layers.sh: who may include whom (docs/HACKING.md), checked on the
# sources.  Folders: common/ includes nothing of ours; netns/, policy/
# and audit/ include only common/ (and themselves).  Modules: inside
# proxy/ and policy/, the include graph of modules has no cycle (a module
# is foo.c + foo.h, foo_int.h being foo's; an edge foo -> bar when foo.c
# or foo.h includes bar.h), so that each folder reads top-down.
# usage: layers.sh [PATH-TO-PINHOLE]   (PH_SRCDIR: source tree; the
# binary is not used: the rule is about the sources)
set -uo pipefail
export LC_ALL=C
src=${PH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() {
	failed=$((failed + 1))
	echo "layers: FAIL: $*"
}

# Quoted includes of the files of folder $1, as "FILE INCLUDED" lines, a
# bare name resolved against the folder itself (policy/ writes "match.h").
includes() {
	local d=$1 f inc
	for f in "$src/$d"/*.[ch]; do
		[ -e "$f" ] || continue
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			while read -r inc; do
				case $inc in
				*/*) ;;
				*) inc=$d/$inc ;;
				esac
				echo "$d/$(basename "$f") $inc"
			done
	done
}

# folder_rule FOLDER ALLOWED-FOLDER...: FOLDER's files include headers of
# only those folders (and of their own).
folder_rule() {
	local d=$1 f inc top
	shift
	if ! ls "$src/$d"/*.[ch] >/dev/null 2>&1; then
		bad "$d/: no sources under $src"
		return
	fi
	while read -r f inc; do
		top=${inc%%/*}
		case " $d $* " in
		*" $top "*) ok ;;
		*) bad "$f includes $inc: $d/ may include only $d/ ${*:-(nothing else)}" ;;
		esac
	done < <(includes "$d")
}

# Module of a file or header path: proxy/session_int.h -> session.
module() {
	local b
	b=$(basename "$1")
	b=${b%.[ch]}
	echo "${b%_int}"
}

# no_cycle FOLDER: the module graph inside FOLDER is acyclic (tsort).
no_cycle() {
	local d=$1 f inc edges loop
	edges=$(includes "$d" | while read -r f inc; do
		[ "${inc%%/*}" = "$d" ] || continue
		[ -e "$src/$inc" ] || continue
		[ "$(module "$f")" = "$(module "$inc")" ] && continue
		echo "$(module "$f") $(module "$inc")"
	done | sort -u)
	if [ -z "$edges" ]; then
		bad "$d/: no module includes another (wrong source tree?)"
		return
	fi
	if loop=$(tsort <<<"$edges" 2>&1 >/dev/null) && [ -z "$loop" ]; then
		ok
	else
		bad "$d/: the module include graph has a cycle:" \
			"$(sed -e "s/^tsort: -: input contains a loop:/ |/" -e "s/^tsort: //" <<<"$loop" | tr "\n" " ")"
	fi
}

folder_rule common
folder_rule netns common
folder_rule policy common
folder_rule audit common
no_cycle proxy
no_cycle policy
echo "layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
