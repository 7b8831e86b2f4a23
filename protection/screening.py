"""The screening of arriving mail (registered on mailcore.inbound.screening's hook): rspamd's verdict
with the connection's facts, read against each recipient's thresholds and sender lists.

In order, for each recipient: a virus is refused with its name; a blocked sender is refused; a
DMARC failure of a domain publishing p=reject is refused (550, with the reason); an allowed sender
(whose DMARC did not fail) goes to the Inbox; a score at the refusal threshold is refused; a
greylisted sender is asked to retry (451, once, when the domain greylists); then a DMARC failure of
a domain publishing p=quarantine goes to Junk at least, and the score decides: held in the
quarantine, Junk or the Inbox. Every copy carries one Authentication-Results of ours; headers of ours that came
from outside are removed first. When rspamd (or clamd behind it) cannot be reached the sender is
asked to retry, until SCANNING_UNSCANNED_AFTER_SECONDS of outage (docs/decisions.md).
"""
import logging
import time
from email.utils import getaddresses

from django.conf import settings
from django.core.cache import cache

from mailcore.inbound.screening import (SCREENING_UNAVAILABLE, VERDICT_HEADER, Action, Arriving, Screening,
                                        Verdict, header_end, remove_our_headers)
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import with_headers
from mailcore.store.reading import header, parse_headers
from protection import rspamd
from protection.lists import sender_listed
from protection.policy import Thresholds, thresholds_for
from protection.quarantine import quarantine_keep
from protection.reasons import reasons_for

log = logging.getLogger(__name__)

AUTHENTICATION_RESULTS = "Authentication-Results"
SCORE_HEADER = "X-Spam-Score"
ACTION_HEADER = "X-Spam-Action"
REASONS_HEADER = "X-Mailwell-Reasons"
DOWN_SINCE_KEY = "protection:scanner-down-since"
DOWN_MEMORY_SECONDS = 900  # an outage is forgotten after this long without a failed scan

GREYLISTED = "451 4.7.1 Greylisted: please try again in a few minutes"
HELD = "250 2.0.0 Accepted and held for review by the recipient"
BLOCKED = "550 5.7.1 Message refused: the recipient does not accept mail from this sender"


def _virus_reply(name: str) -> str:
    return f"554 5.7.1 Message refused: it contains a virus ({name})"


def _dmarc_reply(domain: str) -> str:
    return (f"550 5.7.1 Message refused: {domain} publishes a DMARC policy of p=reject and this message "
            f"was not sent by {domain}'s servers")


def _spam_reply(score: float) -> str:
    return f"550 5.7.1 Message refused as spam (score {score:.1f})"


def screen(*, raw: bytes, arriving: Arriving, mailboxes: dict[str, Mailbox]) -> Screening | None:
    cleaned = remove_our_headers(raw)
    if not settings.RSPAMD_URL:  # scanning off (said so on start-up, /readyz and the console)
        return Screening(raw=cleaned)
    scans: dict[int, rspamd.Scan] = {}
    thresholds = {mailbox.pk: thresholds_for(mailbox) for mailbox in mailboxes.values()}  # one read each
    try:
        for recipient, mailbox in mailboxes.items():
            if mailbox.pk not in scans:  # one scan per mailbox: each has its own Bayes
                scans[mailbox.pk] = rspamd.check(
                    raw, client_ip=arriving.client_ip or "", helo=arriving.helo or "",
                    envelope_from=arriving.envelope_from, deliver_to=mailbox.address,
                    greylist=thresholds[mailbox.pk].greylist,
                    recipients=[other for other, box in mailboxes.items() if box.pk == mailbox.pk])
        if any(scan.antivirus_failed for scan in scans.values()):
            raise rspamd.ScannerUnavailable("clamd did not answer rspamd")
    except rspamd.ScannerUnavailable as error:
        return _unscanned(cleaned, mailboxes, str(error))
    _scanner_answered()
    first = next(iter(scans.values()))
    from_address = _from_address(raw)  # read once: screening changes no From
    from_domain = from_address.rpartition("@")[2]
    screened = with_authentication_results(cleaned, first, arriving, from_domain)
    verdicts: dict[str, Verdict] = {}
    by_mailbox: dict[int, Verdict] = {}  # an alias and its mailbox: one judgement, one quarantined copy
    for recipient, mailbox in mailboxes.items():
        if mailbox.pk not in by_mailbox:
            by_mailbox[mailbox.pk] = _verdict(mailbox, scans[mailbox.pk], screened, arriving, from_address,
                                              thresholds[mailbox.pk])
        verdicts[recipient] = by_mailbox[mailbox.pk]
    return Screening(raw=screened, verdicts=verdicts)


def _verdict(mailbox: Mailbox, scan: rspamd.Scan, screened: bytes, arriving: Arriving,
             from_address: str, thresholds: Thresholds | None = None) -> Verdict:
    if scan.is_virus:
        return Verdict(Action.REFUSE, _virus_reply(scan.virus))
    thresholds = thresholds or thresholds_for(mailbox)
    dmarc_passed = scan.dmarc != "fail"
    found = []
    senders = dict.fromkeys(filter(None, [from_address, arriving.envelope_from])) if thresholds.sender_rules else ()
    for sender in senders:
        kind = sender_listed(mailbox, sender=sender, dmarc_passed=dmarc_passed)
        if kind == "allow" and from_address and sender != from_address and (
                sender.rpartition("@")[2].lower() != from_address.rpartition("@")[2]):
            # An allowed envelope sender never vouches for another domain's From line (DMARC checks
            # the From domain, not the envelope's: MAIL FROM an allowed address, From: anyone).
            kind = None
        found.append(kind)
    # A block of either the From address or the envelope sender refuses, whatever allows the other.
    listed = "block" if "block" in found else ("allow" if "allow" in found else None)
    if listed == "block":
        return Verdict(Action.REFUSE, BLOCKED)
    if scan.dmarc == "fail" and scan.dmarc_policy == "reject":
        return Verdict(Action.REFUSE, _dmarc_reply(from_address.rpartition("@")[2] or "the sender's domain"))
    if listed == "allow":
        return Verdict(Action.INBOX, headers=_headers(scan, "inbox"))
    action = _by_score(scan.score, thresholds)
    if action == Action.REFUSE:
        return Verdict(Action.REFUSE, _spam_reply(scan.score))
    if scan.greylisted and thresholds.greylist:
        return Verdict(Action.DEFER, GREYLISTED)
    if action == Action.INBOX and scan.dmarc == "fail" and scan.dmarc_policy == "quarantine":
        action = Action.JUNK
    reasons = reasons_for(scan.symbols, virus=scan.virus)
    if action == Action.HELD:
        quarantine_keep(mailbox=mailbox, raw=_with(screened, _headers(scan, "quarantine", reasons)),
                        envelope_from=arriving.envelope_from, score=scan.score, reasons=reasons,
                        symbols=scan.symbols)
        return Verdict(Action.HELD, HELD)
    if action == Action.JUNK:
        return Verdict(Action.JUNK, headers=(*_headers(scan, "junk", reasons), (VERDICT_HEADER, "junk")))
    return Verdict(Action.INBOX, headers=_headers(scan, "inbox"))


def _by_score(score: float, thresholds: Thresholds) -> Action:
    if score >= thresholds.refuse_at:
        return Action.REFUSE
    if score >= thresholds.quarantine_at:
        return Action.HELD
    if score >= thresholds.junk_at:
        return Action.JUNK
    return Action.INBOX


def _headers(scan: rspamd.Scan, action: str, reasons: list[str] = ()) -> tuple[tuple[str, str], ...]:
    headers = [(SCORE_HEADER, f"{scan.score:.1f}"), (ACTION_HEADER, action)]
    if reasons:
        headers.append((REASONS_HEADER, _ascii(" | ".join(reasons))))
    return tuple(headers)


def _ascii(text: str) -> str:
    return "".join(char if 32 <= ord(char) < 127 else "?" for char in text)[:900]


def _with(raw: bytes, headers) -> bytes:
    return with_headers(raw, list(headers))


# scanner down


def _scanner_answered() -> None:
    global _failed_here
    if _failed_here:
        cache.delete(DOWN_SINCE_KEY)
        _failed_here = False


_failed_here = False


def _unscanned(cleaned: bytes, mailboxes: dict[str, Mailbox], reason: str) -> Screening:
    """451 while the outage is young; once it has lasted SCANNING_UNSCANNED_AFTER_SECONDS, the
    Inbox, marked unscanned, with none of the owner's automations."""
    global _failed_here
    _failed_here = True
    now = time.time()
    cache.add(DOWN_SINCE_KEY, now, timeout=DOWN_MEMORY_SECONDS)
    since = cache.get(DOWN_SINCE_KEY, now)
    cache.touch(DOWN_SINCE_KEY, DOWN_MEMORY_SECONDS)
    limit = settings.SCANNING_UNSCANNED_AFTER_SECONDS
    if not limit or now - since < limit:
        log.warning("scanner unavailable, mail for %s deferred: %s", list(mailboxes), reason)
        return Screening(raw=cleaned, verdicts={recipient: Verdict(Action.DEFER, SCREENING_UNAVAILABLE)
                                                for recipient in mailboxes})
    log.error("scanner unavailable for %d s, mail for %s accepted unscanned: %s", now - since, list(mailboxes),
              reason)
    marked = _with(cleaned, [(AUTHENTICATION_RESULTS, f"{settings.MAIL_HOST}; none")])
    verdict = Verdict(Action.INBOX, headers=((ACTION_HEADER, "unscanned"), (VERDICT_HEADER, "unscanned")),
                      automations=False)
    return Screening(raw=marked, verdicts=dict.fromkeys(mailboxes, verdict))


# headers


def _from_address(raw: bytes) -> str:
    """The From address, read from the header block only (the body is never parsed here)."""
    head = parse_headers(raw[:header_end(raw)])
    addresses = [address for _, address in getaddresses([header(head, "From")]) if "@" in address]
    return addresses[0].lower() if addresses else ""


def with_authentication_results(raw: bytes, scan: rspamd.Scan, arriving: Arriving, from_domain: str) -> bytes:
    """Our one Authentication-Results (RFC 8601), first in the message."""
    return _with(raw, [(AUTHENTICATION_RESULTS, authentication_results(scan, arriving, from_domain))])


def authentication_results(scan: rspamd.Scan, arriving: Arriving, from_domain: str) -> str:
    sender = arriving.envelope_from
    spf = f"spf={scan.spf} " + (f"smtp.mailfrom={sender}" if sender else f"smtp.helo={arriving.helo or 'unknown'}")
    dkim = f"dkim={scan.dkim}" + (f" header.d={scan.dkim_domains[0]}" if scan.dkim_domains else "")
    policy = f" (p={scan.dmarc_policy})" if scan.dmarc == "fail" and scan.dmarc_policy else ""
    dmarc = f"dmarc={scan.dmarc}{policy}" + (f" header.from={from_domain}" if from_domain else "")
    return _ascii(f"{settings.MAIL_HOST}; {spf}; {dkim}; {dmarc}; arc={scan.arc}")
