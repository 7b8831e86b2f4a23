# Run before each mailbox's own script (sieve_before, mailwell.conf): a copy the app's screener
# marked for Junk (X-Mailwell-Verdict: junk, written by the listener after rspamd's verdict; any
# such header from outside is removed first) is filed in Junk and nothing else runs, so the owner's
# vacation reply and filters never answer or move mail judged as spam.
require ["fileinto"];
if header :is "X-Mailwell-Verdict" "junk" {
  fileinto "Junk";
  stop;
}
