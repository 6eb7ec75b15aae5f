#!/usr/bin/env bash
# Escape scenario, other processes' memory and the proxy's secrets: the
# command cannot ptrace PID 1 (attach, seize), read its memory
# (/proc/1/mem, process_vm_readv), its environment, its root, or take its
# descriptors (pidfd_getfd); the host's processes, pinhole run with the
# secrets among them, are not there to try.  With an environment secret
# and a file secret loaded, neither value is in any /proc/*/environ or
# cmdline inside, nor in any file the sandbox can read where pinhole could
# have left one.  A control shows the prober can trace its own child.
# Prober: tests/escape/escape.c.
# usage: escape_ptrace.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/probe_lib.sh"
ph_begin escape_ptrace
W=$T/work
probe_init "$W"
mkdir -p "$T/conf"
r=$$-$RANDOM$RANDOM
env_value=ENVTOK-$r-END
file_value=FILETOK-$r-END
# The values as patterns that do not contain them ("[-]"), so that a
# command line holding the pattern is no false alarm.
env_pat="ENVTOK-${r}[-]END"
file_pat="FILETOK-${r}[-]END"
printf '%s\n' "$file_value" >"$T/conf/key"
chmod 600 "$T/conf/key"
cat >"$T/conf/p.conf" <<EOC
secret tok env PH_ESCAPE_TOKEN
secret key file $T/conf/key
allow a.test:443 { inject bearer tok }
allow b.test:443 { inject bearer key }
EOC

# The control: a value the scan must find where it was put.
printf 'x %s y\n' "$env_value" >"$W/control.txt"
export PH_ESCAPE_TOKEN=$env_value
prun -p "$T/conf/p.conf" --ro-bind "$T/conf" -- sh -c "
	$PROBE ptrace 1
	sleep 30 & kid=\$!
	$PROBE ptrace \$kid | sed \"s/:\$kid:/:child:/\"
	kill \$kid
	echo environ-hits \$(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline \
		2>/dev/null | tr '\0' '\n' | grep -cE '$env_pat|$file_pat')
	for d in '$W' /tmp /dev/shm /run /var/tmp /etc '$T/conf'; do
		timeout 10 grep -rlsE '$env_pat|$file_pat' \"\$d\"
		[ \$? -eq 124 ] && echo \"scan-timeout \$d\"
	done
	echo scanned"
unset PH_ESCAPE_TOKEN
equal "status" "$RC" 0
for a in ptrace-attach ptrace-seize process-vm-readv pidfd-getfd; do
	refused "$a:1" EPERM
done
for a in open-mem read-environ open-root; do refused "$a:1" EACCES; done
got_through ptrace-attach:child
got_through process-vm-readv:child
expect "environments and command lines scanned" "$OUT" '^environ-hits 0$'
expect "files scanned" "$OUT" '^scanned$'
refuse "no scan ran out of time" "$OUT" '^scan-timeout'
expect "the scan finds a value (control)" "$OUT" "^$(re "$W/control.txt")\$"
refuse "no other readable file holds a secret" \
	"$(grep -v "^$(re "$W/control.txt")\$" <<<"$OUT")" '^/'
refuse "secrets not printed" "$OUT$ERR" "$env_pat|$file_pat"
none_through "PID 1" "$(grep ':1:' <<<"$OUT")"

ph_end
