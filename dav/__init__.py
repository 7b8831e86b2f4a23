"""CardDAV and CalDAV (RFC 4918, 6352, 4791, 6578, 5397, 6764) over the one model of contacts and
events that REST and webmail use: every read goes through mailcore's selectors and every write
through its services, so a change made here is logged for every other client and the other way round.

Each managed mailbox has a default address book and calendar (`contacts/`, `calendar/`, made on first
use) and may have more, made by clients (MKCALENDAR, extended MKCOL), REST or the webmail:

    /dav/                                        root (current-user-principal)
    /dav/principals/<address>/                   the mailbox's principal
    /dav/addressbooks/<address>/<book>/<name>    its address books and contacts (plan feature `contacts`)
    /dav/calendars/<address>/<calendar>/<name>   its calendars, events and tasks (plan feature `calendar`)

Clients sign in with HTTP Basic: the mailbox address and the mailbox password. A path naming any
other address is 404, like every path that does not exist.

One module per method, as Radicale has (views.py dispatches): options, propfind, proppatch, get (and
HEAD), put, delete, mkcol (and MKCALENDAR), move, and report, which hands each REPORT to its module
in reports/. Beneath them: auth (signing in, the plan's gate), tree (the resource a path names),
properties (what PROPFIND and the reports answer), media, conditions (ETags), bodies, responses and
davxml (the XML)."""
