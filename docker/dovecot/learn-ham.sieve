# Run by imapsieve when any IMAP client moves or copies a message out of Junk (mailwell.conf):
# rspamd learns it as ham for this mailbox, unless it went to Trash (deleting spam is no lesson).
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];
if environment :matches "imap.mailbox" "*" {
  set "target" "${1}";
}
if string :is "${target}" ["Trash", "Junk"] {
  stop;
}
if environment :matches "imap.user" "*" {
  set "user" "${1}";
}
pipe :copy "rspamd-learn" ["ham", "${user}"];
