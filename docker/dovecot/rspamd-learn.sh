#!/bin/sh
# rspamd-learn.sh spam|ham <mailbox address> < message
# Hands a message an IMAP client moved into or out of Junk to rspamd's controller (/learnspam or
# /learnham) in the mailbox's Bayes scope (Deliver-To: the mailbox address, as the app learns).
# Installed as `rspamd-learn` in Dovecot's sieve_pipe_bin_dir; reads the controller's URL and
# password from rspamd-learn.env beside it (RSPAMD_CONTROLLER_URL=..., RSPAMD_PASSWORD=...), which
# the entrypoint (production) or testkit/dovecot.py (tests) writes. Without it, learning is off.
set -u
PATH=/usr/local/bin:/usr/bin:/bin
class="${1:-}"
user="${2:-}"
case "$class" in
  spam) path=learnspam ;;
  ham) path=learnham ;;
  *) echo "rspamd-learn: spam or ham, not '$class'" >&2; exit 64 ;;
esac
settings="$(dirname "$0")/rspamd-learn.env"
url=""
password=""
if [ -r "$settings" ]; then
  while IFS='=' read -r key value; do
    case "$key" in
      RSPAMD_CONTROLLER_URL) url="$value" ;;
      RSPAMD_PASSWORD) password="$value" ;;
    esac
  done < "$settings"
fi
if [ -z "$url" ]; then
  cat > /dev/null  # scanning is off here: nothing to teach
  exit 0
fi
# 200: learned; 208: learned before (rspamd's learn cache), both done. Anything else is logged by
# Dovecot (this script's stderr and exit status); the move itself has happened either way.
# The headers go on a here-document (file descriptor 3), not the command line: a password in curl's
# arguments would show in `ps` to every local user.
status=$(curl --silent --show-error --max-time 15 --data-binary @- -H @/dev/fd/3 \
  -o /dev/null -w '%{http_code}' "${url%/}/$path" 3<<EOF
Password: $password
Deliver-To: $user
EOF
)
case "$status" in
  200|208) exit 0 ;;
  *) echo "rspamd-learn: $path for $user answered ${status:-nothing}" >&2; exit 75 ;;
esac
