# Run by imapsieve when any IMAP client moves or copies a message into Junk (mailwell.conf): rspamd
# learns it as spam for this mailbox (its Bayes scope is the mailbox address, Dovecot's user).
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];
if environment :matches "imap.user" "*" {
  set "user" "${1}";
}
pipe :copy "rspamd-learn" ["spam", "${user}"];
