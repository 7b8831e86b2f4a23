#!/bin/sh
# Production start: the lookup tables get the database password and host from the environment
# (never baked into the image), the host name is MAIL_HOST, then Postfix runs in the foreground.
set -eu
: "${POSTFIX_DB_PASSWORD:?set POSTFIX_DB_PASSWORD}"
install -d -m 0755 /etc/postfix/pgsql
for table in /etc/postfix/mailwell/pgsql/*.cf; do
  sed "s|@POSTFIX_DB_PASSWORD@|${POSTFIX_DB_PASSWORD}|" "$table" > "/etc/postfix/pgsql/$(basename "$table")"
done
chown root:postfix /etc/postfix/pgsql/*.cf
chmod 0640 /etc/postfix/pgsql/*.cf
if [ -n "${MAIL_HOST:-}" ]; then postconf -e "myhostname=${MAIL_HOST}"; fi
postconf -e "maillog_file=/dev/stdout"
exec postfix start-fg
