#!/bin/sh
# Debian's master.cf (pickup, cleanup, qmgr, lmtp, ...) with its `smtp inet` service replaced by
# ours (master.cf beside this script): what the image installs as /etc/postfix/master.cf, and
# what testkit/postfix.py starts (there with loopback ports and without chroot).
set -eu
dist=${1:-/usr/share/postfix/master.cf.dist}
ours=$(dirname "$0")/master.cf
awk '/^smtp[ \t]+inet/ { skip = 1; next } skip && /^[ \t]/ { next } { skip = 0; print }' "$dist"
cat "$ours"
