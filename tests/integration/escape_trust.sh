#!/usr/bin/env bash
# Escape probe: the files pinhole trusts, within the sandbox's reach.
# The sandbox writes its start directory; a policy, include, secret file,
# secret helper, CA certificate or key, or upstream-ca that lies there, or
# whose path passes there (a symlink, a directory, a symlink's target),
# could be replaced or retargeted from inside: the next run would read
# another policy, or the proxy trust the sandbox's own CA for the host
# that receives the injected token.  `pinhole run` refuses every such
# path (125, saying which entry); the same files outside run.
# usage: escape_trust.sh PATH-TO-PINHOLE
. "$(dirname "$0")/lib.sh"
ph_begin escape_trust openssl
W=$T/work
O=$T/outside
mkdir -p "$W" "$O"
gen_certs >/dev/null || exit 1
printf 'TOKEN%s\n' "$$" >"$O/token"
chmod 600 "$O/token"
printf '#!/bin/sh\necho helper-value\n' >"$O/helper.sh"
chmod 755 "$O/helper.sh"
cp "$T/ca.pem" "$O/up.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$O/ca.key" -out "$O/ca.pem" -days 1 -subj "/CN=escape CA" \
	-addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign >/dev/null 2>&1
chmod 600 "$O/ca.key"
echo 'allow example.test:443' >"$O/strict.conf"

# trust_conf FILE TOKEN HELPER UPCA CACERT CAKEY: a policy naming them all.
trust_conf() {
	cat >"$1" <<-EOC
		secret tok file $2
		secret helper exec $3
		ca cert $5 key $6
		allow example.test:443 { paths /x/* inject bearer tok upstream-ca $4 }
		allow other.test:443 { methods GET inject bearer helper }
	EOC
}

# refused NAME PATTERN: the last prun was refused with 125 and PATTERN.
refused() {
	equal "$1: refused" "$RC" 125
	expect "$1: says which" "$ERR" "$2"
}

# --- control: everything outside the sandbox's reach runs ----------------------
trust_conf "$O/all.conf" "$O/token" "$O/helper.sh" "$O/up.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/all.conf" -- true
equal "all outside: runs" "$RC" 0
[ "$RC" -eq 0 ] || printf '%s\n' "$ERR" | sed 's/^/  | /'
prun -p "$O/strict.conf" -- true
equal "a policy outside: runs" "$RC" 0

# --- (a) a policy symlink in the work directory ---------------------------------
# Its target is outside, but the link is the sandbox's to retarget.
ln -s "$O/strict.conf" "$W/strict.conf"
prun -p strict.conf -- true
refused "policy symlink in the work directory" \
	"policy file strict\.conf: .*/work/strict\.conf lies in a directory the sandbox may write"
# The attack it stops: retargeted from inside, the next run reads another.
echo 'allow *' >"$T/wide.conf"
prun -p "$O/strict.conf" -- ln -sf "$T/wide.conf" strict.conf
equal "the sandbox can retarget it" "$(readlink "$W/strict.conf")" "$T/wide.conf"
prun -p strict.conf -- true
refused "retargeted policy symlink" "work/strict\.conf lies in a directory"
rm -f "$W/strict.conf"

# --- a path outside that passes through the work directory ------------------------
# $O/via.conf -> $W/hop -> $O/strict.conf: realpath is outside, the hop is not.
ln -s "$O/strict.conf" "$W/hop"
ln -s "$W/hop" "$O/via.conf"
prun -p "$O/via.conf" -- true
refused "policy through a symlink in the work directory" "work/hop lies in a directory"
# A directory of the work directory on the way: $O/dirlink -> $W/d.
mkdir -p "$W/d"
cp "$O/strict.conf" "$W/d/p.conf"
ln -s "$W/d" "$O/dirlink"
prun -p "$O/dirlink/p.conf" -- true
refused "policy in a directory of the work directory" "work/d lies in a directory"
# An include through the work directory.
printf 'include %s\nallow example.test:443\n' "$O/inc-link" >"$O/incl.conf"
echo 'allow other.test:443' >"$O/inc.conf"
ln -s "$W/hop2" "$O/inc-link"
ln -s "$O/inc.conf" "$W/hop2"
prun -p "$O/incl.conf" -- true
refused "include through the work directory" "policy file .*inc-link: .*work/hop2 lies in a directory"

# --- secrets, helpers, CA, trust anchors in reach -----------------------------------
cp -p "$O/token" "$W/token"
trust_conf "$O/t1.conf" "$W/token" "$O/helper.sh" "$O/up.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/t1.conf" -- true
refused "secret file in the work directory" "secret file .*work/token"
ln -s "$W/hop3" "$O/token-link"
ln -s "$O/token" "$W/hop3"
trust_conf "$O/t2.conf" "$O/token-link" "$O/helper.sh" "$O/up.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/t2.conf" -- true
refused "secret file through the work directory" "secret file .*token-link: .*work/hop3"
cp -p "$O/helper.sh" "$W/helper.sh"
trust_conf "$O/t3.conf" "$O/token" "$W/helper.sh" "$O/up.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/t3.conf" -- true
refused "secret helper in the work directory" "secret helper .*work/helper\.sh"
# A helper named without a '/', found through a PATH entry in the work
# directory (an empty entry is the current directory, as for execvp).
cp -p "$O/helper.sh" "$W/ph-helper"
trust_conf "$O/t3b.conf" "$O/token" ph-helper "$O/up.pem" "$O/ca.pem" "$O/ca.key"
PATH="$PATH:" prun -p "$O/t3b.conf" -- true
refused "secret helper found through PATH in the work directory" \
	"secret helper ph-helper: .*work/ph-helper lies in a directory"
cp -p "$O/helper.sh" "$O/ph-helper"
PATH="$O:$PATH:" prun -p "$O/t3b.conf" -- true
equal "the same helper found outside first: runs" "$RC" 0
cp -p "$O/ca.key" "$W/ca.key"
trust_conf "$O/t4.conf" "$O/token" "$O/helper.sh" "$O/up.pem" "$O/ca.pem" "$W/ca.key"
prun -p "$O/t4.conf" -- true
refused "CA key in the work directory" "CA key .*work/ca\.key"
ln -s "$W/d" "$O/cadir"
cp -p "$O/ca.pem" "$W/d/ca.pem"
trust_conf "$O/t5.conf" "$O/token" "$O/helper.sh" "$O/up.pem" "$O/cadir/ca.pem" "$O/ca.key"
prun -p "$O/t5.conf" -- true
refused "CA certificate through the work directory" "CA certificate .*cadir/ca\.pem: .*work/d lies"

# --- (b) an upstream-ca the sandbox could overwrite ---------------------------------
# Loaded at the first intercepted request, it used to be read after the
# sandbox had put its own CA in it.  Refused now, before anything runs.
cp "$T/ca.pem" "$W/up.pem"
trust_conf "$O/t6.conf" "$O/token" "$O/helper.sh" "$W/up.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/t6.conf" -- true
refused "upstream-ca in the work directory" "upstream-ca .*work/up\.pem lies in a directory"
ln -s "$W/up.pem" "$O/up-link.pem"
trust_conf "$O/t7.conf" "$O/token" "$O/helper.sh" "$O/up-link.pem" "$O/ca.pem" "$O/ca.key"
prun -p "$O/t7.conf" -- true
refused "upstream-ca through the work directory" "upstream-ca .*up-link\.pem: .*work/up\.pem"

# --- the audit log through a symlink the sandbox could retarget -----------------------
# Its target is outside, but retargeted from inside, the next run would
# write elsewhere and `pinhole log LINK` read a log the sandbox forged.
ln -s "$O/audit.jsonl" "$W/audit-link"
RUN_LOG=$W/audit-link prun -- true
refused "audit log through a symlink in the work directory" \
	"audit log .*work/audit-link: .*work/audit-link lies in a directory"
rm -f "$W/audit-link"

# --- a writable bind is the sandbox's too ---------------------------------------------
mkdir -p "$T/bound"
cp "$O/strict.conf" "$T/bound/p.conf"
prun -p "$T/bound/p.conf" --bind "$T/bound" -- true
refused "policy in a writable bind" "bound/p\.conf lies in a directory"
prun -p "$T/bound/p.conf" --ro-bind "$T/bound" -- true
equal "policy in a read-only bind: runs" "$RC" 0

ph_end
