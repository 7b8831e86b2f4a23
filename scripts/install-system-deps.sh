#!/usr/bin/env bash
# System packages the test suite starts natively: Dovecot (IMAP, LMTP, PostgreSQL and SQLite
# auth, Pigeonhole Sieve for owners' filters and vacation replies), the same server docker/dovecot/
# configures for production, Postfix with its PostgreSQL and SQLite tables (docker/postfix/, started
# as a private instance by testkit/postfix.py) and postfix-mta-sts-resolver (its MTA-STS policy table,
# started by testkit/mta_sts.py), Chromium for the browser journeys in e2e/ (Playwright drives
# Debian's build; it never downloads one), Caddy, which runs docker/caddy/Caddyfile in a test, and
# docker-compose (its `config` checks docker/compose.yaml; no Docker engine is installed or needed),
# rspamd with a redis-server of its own and clamd (docker/rspamd/, started privately by
# testkit/rspamd.py and testkit/clamd.py, and by `make run`; clamd reads a signature file the test
# writes, so freshclam never runs).
# Idempotent: installs only what is missing. Needs root (CI runs as root); prints what to run otherwise.
set -euo pipefail

packages=(dovecot-imapd dovecot-lmtpd dovecot-pgsql dovecot-sqlite dovecot-sieve postfix postfix-pgsql postfix-sqlite
          postfix-mta-sts-resolver chromium caddy docker-compose rspamd redis-server clamav-daemon curl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -eq 0 ]] && PATH="$PATH:/usr/sbin" command -v dovecot postfix mta-sts-daemon rspamd clamd >/dev/null; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "Missing system packages: ${missing[*]}. Run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Postfix's package asks how to configure the machine's own mail: not at all (the suite runs its own).
echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
apt-get update -qq
# docker-compose without its recommended Docker engine: only its `config` is used.
apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
# The packages' own service is not used (the suite starts private instances); in a container
# its start is refused by policy-rc.d, which is harmless.
