#!/bin/sh
# Prints the passwd-file line of the app's master user from DOVECOT_MASTER_USER and
# DOVECOT_MASTER_PASSWORD (the app's settings of the same names). DOVECOT_MASTER_NETS (optional,
# comma-separated networks) limits master logins to those addresses: the app's containers. Used by entrypoint.sh in
# production and by the test suite's Dovecot (testkit/dovecot.py).
set -eu
: "${DOVECOT_MASTER_USER:?DOVECOT_MASTER_USER is not set}"
: "${DOVECOT_MASTER_PASSWORD:?DOVECOT_MASTER_PASSWORD is not set}"
case "$DOVECOT_MASTER_USER" in
  *:* | *"*"* | *" "*) echo "DOVECOT_MASTER_USER must not contain ':', '*' or spaces" >&2; exit 1 ;;
esac
# doveadm pw reads the password twice from stdin, keeping it out of the process list.
hash=$(printf '%s\n%s\n' "$DOVECOT_MASTER_PASSWORD" "$DOVECOT_MASTER_PASSWORD" | doveadm pw -s SSHA512)
case "${DOVECOT_MASTER_NETS:-}" in
  *[!0-9a-fA-F.:/,]*) echo "DOVECOT_MASTER_NETS is a comma-separated list of networks (10.0.0.0/8,::1)" >&2; exit 1 ;;
esac
# user:password:uid:gid:gecos:home:shell:extra fields; allow_nets is checked on every master login.
printf '%s:%s::::::%s\n' "$DOVECOT_MASTER_USER" "$hash" "${DOVECOT_MASTER_NETS:+allow_nets=$DOVECOT_MASTER_NETS}"
