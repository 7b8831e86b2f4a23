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
exec dovecot -F -c /etc/dovecot/dovecot.conf
