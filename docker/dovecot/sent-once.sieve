# Run by imapsieve for every APPEND to Sent (mailwell.conf). Mail sent from an owner's own client
# is kept in Sent by the app, and most clients save their own copy too: the second message with
# the same Message-ID within a day is dropped, whichever of the two came first.
require ["duplicate"];
if duplicate :seconds 86400 {
  discard;
}
