"""Webmail for mailbox owners (a partner's end users), signed in with the mailbox's own password:
a realm of its own, never a portal login. Served under /webmail/ on the platform's host and at /
on a partner's verified webmail hostname. Reserved here; the webmail issue fills it."""
