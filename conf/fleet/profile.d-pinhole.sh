# shellcheck shell=sh
# /etc/profile.d/pinhole.sh: every login shell's `pinhole run` goes
# through this host's broker, which holds the secrets; `pinhole run -p
# NAME` then names a policy the broker grants to the user.  (Or, for
# every session that reads it, the line PINHOLE_BROKER=/run/pinhole/broker.sock
# in /etc/environment.)
export PINHOLE_BROKER=/run/pinhole/broker.sock
