#!/usr/bin/env bash
# Escape scenario, the launcher holds no secret: with an environment
# secret and a file secret loaded and a run CA made, once
# the sandbox has started, neither secret value is anywhere in the memory
# of pinhole run's launcher (every readable mapping of /proc/PID/mem,
# read as the user who ran it), while the engine, its child, holds them
# and is not dumpable: its memory is closed to that user (as root, whom
# that does not stop, the scan finds the file secret there: the control
# that the scan sees what is there).  A second control: a plain variable
# of the launcher's environment is found in its memory.
# usage: escape_launcher.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_launcher dd
W=$T/work
mkdir -p "$W" "$T/conf"
r=$$-$RANDOM$RANDOM
env_value=ENVTOK-$r-END
file_value=FILETOK-$r-END
ctl_value=CTLVAL-$r-END
printf '%s\n' "$file_value" >"$T/conf/key"
chmod 600 "$T/conf/key"
cat >"$T/conf/p.conf" <<EOC
secret tok env PH_ESCAPE_TOKEN
secret key file $T/conf/key
allow a.test:443 { inject bearer tok }
allow b.test:443 { inject bearer key }
EOC

# mem_has PID VALUE: prints "found", "absent" or "unreadable" for VALUE
# in the readable mappings of PID's memory.
mem_has() {
	local range perms rest start end total=0 hits=0 n
	while read -r range perms rest; do
		case $perms in r*) ;; *) continue ;; esac
		case $rest in *'[vsyscall]'* | *'[vvar]'*) continue ;; esac
		start=$((16#${range%-*}))
		end=$((16#${range#*-}))
		# AddressSanitizer reserves terabytes of shadow, which holds no
		# program data and would take hours to read: left out, said.
		if [ $((end - start)) -gt $((1 << 30)) ]; then
			echo "escape_launcher: $range ($(((end - start) >> 30)) GiB," \
				"sanitizer shadow) not read" >&2
			continue
		fi
		n=$(dd if="/proc/$1/mem" bs=65536 iflag=skip_bytes,count_bytes \
			skip="$start" count=$((end - start)) 2>"$T/dd.err" |
			grep -caF -- "$2")
		hits=$((hits + ${n:-0}))
		n=$(sed -n 's/^\([0-9][0-9]*\) bytes.*/\1/p' "$T/dd.err")
		total=$((total + ${n:-0}))
	done 2>/dev/null <"/proc/$1/maps"
	if [ "$total" -eq 0 ]; then
		echo unreadable
	elif [ "$hits" -gt 0 ]; then
		echo found
	else
		echo absent
	fi
}

export PH_ESCAPE_TOKEN=$env_value PH_CONTROL=$ctl_value
cd "$W" || exit 1
spawn run "$PINHOLE" run --log "$T/audit.jsonl" -p "$T/conf/p.conf" \
	-- sh -c 'echo up >started; exec sleep 60'
cd "$T" || exit 1
unset PH_ESCAPE_TOKEN PH_CONTROL
launcher=$SPAWNED
if wait_for 20 file_has "$W/started" up; then ok; else
	bad "the sandbox did not start: $(cat "$T/run.err")"
fi
# The engine: the launcher's child in the launcher's PID namespace (the
# sandbox's first process has a second NSpid).
engine=
for c in $(cat "/proc/$launcher/task/$launcher/children" 2>/dev/null); do
	ns=$(awk '/^NSpid:/ { print NF - 1 }' "/proc/$c/status" 2>/dev/null)
	[ "$ns" = 1 ] && engine=$c
done
[ -n "$engine" ] && ok || bad "no engine among the launcher's children"

equal "launcher: the control variable is in its memory" \
	"$(mem_has "$launcher" "$ctl_value")" found
if grep -q __asan_init "$PINHOLE"; then
	# The sanitizer runtime reads /proc/self/environ into a buffer of its
	# own at start and keeps it: not pinhole's copy, and no release build
	# has it (the check runs in the plain builds, as root and 65534).
	echo "escape_launcher: sanitized build: the environment secret check" \
		"is left out (the sanitizer runtime keeps the start environment)"
else
	equal "launcher: no environment secret in its memory" \
		"$(mem_has "$launcher" "$env_value")" absent
fi
equal "launcher: no file secret in its memory" \
	"$(mem_has "$launcher" "$file_value")" absent
if [ "$(id -u)" = 0 ]; then
	equal "engine: the file secret is in its memory (control)" \
		"$(mem_has "$engine" "$file_value")" found
else
	equal "engine: not dumpable, its memory closed to its user" \
		"$(mem_has "$engine" "$file_value")" unreadable
fi
kill -TERM "$launcher"
wait_exit "$launcher" 10
equal "pinhole run ends with the command (SIGTERM)" "$EXIT_STATUS" 143
refuse "secrets not printed" "$(cat "$T/run.out" "$T/run.err")" \
	"$env_value|$file_value"

ph_end
