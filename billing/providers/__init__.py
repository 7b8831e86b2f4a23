"""Payment providers behind one interface (local, stripe, paystack): create a checkout, fetch its
state, verify and parse a signed webhook into one normalised event. Filled by the billing issue;
every money change is applied by a billing service from such a verified event."""
