"""A mailbox's filters and vacation reply as one Sieve script (RFC 5228) for Dovecot's Pigeonhole.

Owners never write Sieve. What they typed reaches the script only as quoted strings made here
(backslash and double quote escaped, control characters dropped), so no value can end its string
and start a command. The vacation reply runs first, so a filter's "stop" never silences it; then
the filters, in order. The embedded store applies the same rows the same way
(mailcore.rules.delivery).
"""
from collections.abc import Iterable, Sequence
from datetime import date

from mailcore.rules.models import MailFilter, VacationReply

HEADER = "# Mailwell: made from this mailbox's filter and vacation settings. Changes made here are replaced.\r\n"
SEEN = "\\Seen"
FLAGGED = "\\Flagged"
# Dates of the vacation reply are days in UTC (the platform's TIME_ZONE), in Sieve and in the embedded store.
ZONE = "+0000"
# The header tests of each filter field: `contains` looks at the whole header (names too), `is` at addresses.
# Senders a vacation reply never answers (besides those Pigeonhole already skips): noreply@,
# no-reply@, donotreply@... as the envelope sender or in From/Sender, matched as local-part prefixes.
NOREPLY_PREFIXES = ("noreply", "no-reply", "no_reply", "donotreply", "do-not-reply", "do_not_reply")
HEADERS = {MailFilter.Field.FROM: ["from"], MailFilter.Field.TO: ["to", "cc"], MailFilter.Field.SUBJECT: ["subject"]}


def quoted(value: str, *, multiline: bool = False) -> str:
    """`value` as a Sieve quoted string. Line breaks become CRLF in a multi-line value (the vacation
    text) and spaces elsewhere; NUL and other control characters are dropped."""
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    kept = []
    for char in text:
        if char == "\n":
            kept.append("\r\n" if multiline else " ")
        elif char == "\t" or not (ord(char) < 32 or ord(char) == 127):
            kept.append(char)
    escaped = "".join(kept).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def string_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(quoted(value) for value in values) + "]"


def _test(mail_filter: MailFilter) -> str:
    headers = string_list(HEADERS[mail_filter.field])
    match = ":is" if mail_filter.match == MailFilter.Match.IS else ":contains"
    if mail_filter.field != MailFilter.Field.SUBJECT and mail_filter.match == MailFilter.Match.IS:
        return f"address :all :is {headers} {quoted(mail_filter.value)}"
    return f"header {match} {headers} {quoted(mail_filter.value)}"


def _action(mail_filter: MailFilter) -> str:
    Action = MailFilter.Action
    if mail_filter.action == Action.MOVE:
        return f"fileinto {quoted(mail_filter.folder)};"
    if mail_filter.action == Action.MARK_READ:
        return f"addflag {quoted(SEEN)};"
    if mail_filter.action == Action.STAR:
        return f"addflag {quoted(FLAGGED)};"
    if mail_filter.action == Action.LABEL:
        return f"addflag {quoted(mail_filter.label.keyword)};"
    return "discard;"


def _extensions(filters: Sequence[MailFilter], vacation: VacationReply | None) -> list[str]:
    actions = {mail_filter.action for mail_filter in filters}
    needed = set()
    if MailFilter.Action.MOVE in actions:
        needed.add("fileinto")
    if actions & {MailFilter.Action.MARK_READ, MailFilter.Action.STAR, MailFilter.Action.LABEL}:
        needed.add("imap4flags")
    if vacation is not None:
        needed |= {"vacation", "envelope"}
        if vacation.starts_on or vacation.ends_on:
            needed |= {"date", "relational"}
    return sorted(needed)


def _day_test(comparison: str, day: date) -> str:
    return f'currentdate :zone "{ZONE}" :value "{comparison}" "date" {quoted(day.isoformat())}'


def _vacation(vacation: VacationReply, addresses: Sequence[str]) -> str:
    tags = [f":days {int(vacation.days)}"]
    if vacation.subject.strip():
        tags.append(f":subject {quoted(vacation.subject.strip())}")
    tags.append(f":addresses {string_list(addresses)}")
    command = f"vacation {' '.join(tags)} {quoted(vacation.body, multiline=True)};"
    patterns = string_list(f"{prefix}*" for prefix in NOREPLY_PREFIXES)
    tests = ([_day_test("ge", vacation.starts_on)] if vacation.starts_on else []) + \
            ([_day_test("le", vacation.ends_on)] if vacation.ends_on else []) + \
            [f'not envelope :localpart :matches "from" {patterns}',
             f'not address :localpart :matches ["from", "sender"] {patterns}']
    condition = f"allof({', '.join(tests)})"
    return f"# Vacation reply\r\nif {condition} {{\r\n  {command}\r\n}}\r\n"


def render(*, filters: Sequence[MailFilter], vacation: VacationReply | None, addresses: Sequence[str]) -> str:
    """The script for these rows: the enabled filters in the order given, the vacation reply when it
    is on (`addresses`: the mailbox's address and its aliases). Empty when there is nothing to do."""
    filters = [mail_filter for mail_filter in filters if mail_filter.enabled]
    if vacation is not None and not vacation.enabled:
        vacation = None
    if not filters and vacation is None:
        return ""
    extensions = _extensions(filters, vacation)
    parts = [HEADER] + ([f"require {string_list(extensions)};\r\n"] if extensions else [])
    if vacation is not None:
        parts.append("\r\n" + _vacation(vacation, addresses))
    for number, mail_filter in enumerate(filters, start=1):
        body = [_action(mail_filter)] + (["stop;"] if mail_filter.stop else [])
        lines = "".join(f"  {line}\r\n" for line in body)
        parts.append(f"\r\n# Filter {number}\r\nif {_test(mail_filter)} {{\r\n{lines}}}\r\n")
    return "".join(parts)
