#!/bin/sh
# Production start: write the master user's passwd-file from the environment (readable by the
# auth process, which runs as the dovecot user), then run Dovecot in the foreground.
set -eu
install -d -m 0755 /run/dovecot
install -d -m 0755 -o mail -g mail /srv/mail
/etc/dovecot/master-users.sh > /run/dovecot/master-users.new
chown root:dovecot /run/dovecot/master-users.new
chmod 0640 /run/dovecot/master-users.new
mv /run/dovecot/master-users.new /run/dovecot/master-users
# The rspamd controller IMAP moves into and out of Junk teach (rspamd-learn reads it as the mail user).
printf 'RSPAMD_CONTROLLER_URL=%s\nRSPAMD_PASSWORD=%s\n' "${RSPAMD_CONTROLLER_URL:-}" "${RSPAMD_PASSWORD:-}" \
  > /etc/dovecot/sieve-pipe/rspamd-learn.env.new
chown root:mail /etc/dovecot/sieve-pipe/rspamd-learn.env.new
chmod 0640 /etc/dovecot/sieve-pipe/rspamd-learn.env.new
mv /etc/dovecot/sieve-pipe/rspamd-learn.env.new /etc/dovecot/sieve-pipe/rspamd-learn.env
exec dovecot -F -c /etc/dovecot/dovecot.conf
