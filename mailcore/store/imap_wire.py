"""IMAP as the `imap` store speaks it: FETCH/ENVELOPE/BODYSTRUCTURE read, SEARCH keys built, refusals mapped."""
from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from email.errors import HeaderParseError
from email.header import decode_header, make_header

from imapclient import IMAPClient
from imapclient.datetime_util import parse_to_datetime
from imapclient.exceptions import IMAPClientError
from imapclient.imap_utf7 import decode as decode_utf7
from imapclient.response_parser import parse_fetch_response, parse_response
from imapclient.response_types import Address, BodyData, Envelope
from imapclient.util import chunk

from mailcore.store.base import (
    HAS_ATTACHMENT,
    SERVER_KEYWORDS,
    Criteria,
    FolderNotFound,
    QuotaExceeded,
    StoreError,
    validate_keyword,
)

SUMMARY_FIELDS = [b"ENVELOPE", b"FLAGS", b"RFC822.SIZE", b"BODYSTRUCTURE", b"INTERNALDATE"]
# An IMAP atom usable as a keyword (RFC 3501 flag-keyword): no spaces, specials or controls.
_COPYUID = re.compile(rb"COPYUID \d+ [\d:,]+ (\d+)")
_APPENDUID = re.compile(rb"APPENDUID \d+ (\d+)")


def _text(value: bytes | str | None) -> str:
    """A header value from ENVELOPE: encoded words decoded, whitespace collapsed, no NUL (as
    mailcore.store.reading gives it)."""
    if value is None:
        return ""
    raw = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
    if "=?" not in raw:  # no encoded words: decoding would give the same text back
        return " ".join(raw.split())
    try:
        decoded = str(make_header(decode_header(raw)))
    except (ValueError, LookupError, UnicodeError, HeaderParseError):  # bad base64 in an encoded word, say
        decoded = raw
    return " ".join(decoded.replace("\x00", "").split())


def _address(address: Address) -> str | None:
    if not address.mailbox or not address.host:
        return None  # the start or end of an address group
    email = f"{_text(address.mailbox)}@{_text(address.host)}"
    name = _text(address.name)
    return f"{name} <{email}>" if name else email


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _flags(values: Sequence[bytes]) -> tuple[str, ...]:
    flags = (value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value for value in values)
    return tuple(flag for flag in flags if flag != "\\Recent" and flag not in SERVER_KEYWORDS)


def _param(params: object, name: bytes) -> bytes | None:
    """A parameter of a BODYSTRUCTURE (name value ...) list; `filename*` (RFC 2231) counts too."""
    if not isinstance(params, tuple):
        return None
    pairs = zip(params[::2], params[1::2], strict=False)
    return next((value for key, value in pairs if isinstance(key, bytes) and key.lower().split(b"*")[0] == name), None)


def _is_attachment(part: tuple) -> bool:
    """One leaf of BODYSTRUCTURE, judged like mailcore.store.reading: an attachment is a part
    with disposition `attachment`, or a named part that is neither inline nor the text itself."""
    content_type = f"{_text(part[0])}/{_text(part[1])}".lower()
    # The 7 basic fields, the line count of text/* or envelope+body+lines of message/rfc822,
    # then the MD5, then the disposition.
    extra = 1 if content_type.startswith("text/") else 3 if content_type == "message/rfc822" else 0
    position = 7 + extra + 1
    disposition = part[position] if len(part) > position and isinstance(part[position], tuple) else None
    kind = _text(disposition[0]).lower() if disposition else ""
    filename = _param(disposition[1] if disposition and len(disposition) > 1 else None, b"filename")
    filename = filename or _param(part[2], b"name")
    named_file = bool(filename) and kind != "inline" and content_type not in {"text/plain", "text/html"}
    return kind == "attachment" or named_file


def _has_attachments(body: BodyData) -> bool:
    if body.is_multipart:
        return any(_has_attachments(part) for part in body[0])
    return _is_attachment(tuple(body))


# A list's FETCH answer read with one regular expression per line instead of imapclient's
# character-by-character lexer (most of a page's time), giving the values imapclient gives: NIL,
# numbers, quoted strings (\\ and \" escapes), literals, atoms with [sections]. A token is told by
# its first byte; anything else (a lone byte no other form takes) leaves the answer to imapclient's
# own parser. Each form is written as a run of its characters, not one character per step: the
# expression was half of the reading.
_FETCH_TOKEN = re.compile(
    rb'[ \t\r\n]*("[^"\\]*(?:\\.[^"\\]*)*"|[()]|(?:[^\x00-\x20()%"\[]+|\[[^\]]*\])+|.)', re.DOTALL)
_WORD_START = re.compile(rb'[^\x00-\x20()%"\[]|\[.', re.DOTALL)  # a lone [ is no word
_QUOTED_ESCAPE = re.compile(rb'\\([\\"])')
_OPEN, _CLOSE, _QUOTE = b"()\""  # ints, as indexing bytes gives them


class _Unparsed(Exception):
    """The answer holds something the fast reader leaves to imapclient."""


def _word(word: bytes, literal: bytes | None):
    if word == b"NIL":
        return None
    if word[:1] == b"{":
        if literal is None or word != b"{%d}" % len(literal):
            raise _Unparsed
        return literal
    if word.isdigit() and (word[:1] != b"0" or len(word) == 1):
        return int(word)
    return word


def _atoms(records: list) -> list:
    """imaplib's untagged records (a line, or a line ending in {n} with its literal) as nested tuples."""
    stack: list[list] = []  # the lists still open around `current`
    current: list = []
    append = current.append
    for record in records:
        text, literal = record if isinstance(record, tuple) else (record, None)
        for token in _FETCH_TOKEN.findall(text):
            first = token[0]
            if first == _QUOTE and len(token) > 1:  # a whole quoted string (a lone " is no token)
                value = token[1:-1]
                append(_QUOTED_ESCAPE.sub(rb"\1", value) if b"\\" in value else value)
            elif first == _OPEN:
                stack.append(current)
                current = []
                append = current.append
            elif first == _CLOSE:
                if not stack:
                    raise _Unparsed
                done = tuple(current)
                current = stack.pop()
                append = current.append
                append(done)
            elif _WORD_START.match(token):
                append(_word(token, literal))
            else:
                raise _Unparsed
    if stack:
        raise _Unparsed
    return current


def _date(value) -> datetime | None:
    """As imapclient reads ENVELOPE and INTERNALDATE dates (server time zones kept)."""
    try:
        return parse_to_datetime(value, normalise=False) if value else None
    except ValueError:
        return None


def _addresses(value) -> tuple[Address, ...] | None:
    return tuple(Address(*address) for address in value if address) if value else None


def _envelope(value: tuple) -> Envelope:
    return Envelope(_date(value[0]), value[1], *(_addresses(part) for part in value[2:8]),
                    in_reply_to=value[8], message_id=value[9])


_CONVERT = {b"UID": int, b"INTERNALDATE": _date, b"ENVELOPE": _envelope, b"BODYSTRUCTURE": BodyData.create}


def _fetched(records: list, *, by_uid: bool) -> dict[int, dict]:
    """A FETCH answer as {UID or sequence number: {item: value}}, typed and keyed as imapclient's
    parse_fetch_response gives it (UID among the items when keyed by sequence number)."""
    if records == [None]:
        return {}
    try:
        atoms = _atoms(records)
        found: dict[int, dict] = {}
        for number, items in zip(atoms[::2], atoms[1::2], strict=True):
            values = {name.upper(): value for name, value in zip(items[::2], items[1::2], strict=True)}
            values = {name: _CONVERT[name](value) if name in _CONVERT else value for name, value in values.items()}
            found.setdefault(values.get(b"UID", int(number)) if by_uid else int(number), {}).update(values)
        return found
    except (_Unparsed, ValueError, TypeError, IndexError, AttributeError):
        return parse_fetch_response(records, False, by_uid)


def _fetch_summaries(client: IMAPClient, ids: list[int], *, by_uid: bool) -> dict[int, dict]:
    """FETCH the list's items as IMAPClient.fetch sends it, read by _fetched instead of imapclient."""
    imap = client._imap  # noqa: SLF001 - imaplib's connection: the answer before imapclient parses it
    command = ["UID"] if by_uid else []
    tag = imap._command(*command, "FETCH", ",".join(map(str, ids)),  # noqa: SLF001
                        "(" + " ".join(item.decode() for item in [b"UID", *SUMMARY_FIELDS]) + ")")
    typ, data = imap._command_complete("FETCH", tag)  # noqa: SLF001
    if typ != "OK":
        raise IMAPClientError(f"fetch failed: {data[0]!r}")
    return _fetched(imap._untagged_response(typ, data, "FETCH")[1], by_uid=by_uid)  # noqa: SLF001


# A <msg-id> safe to send as a quoted IMAP search string.
_SAFE_ID = re.compile(r"<[!-;=?-~]{1,500}>")


def _search_keys(criteria: Criteria, *, starred_only: bool = False, unseen_only: bool = False,
                 keyword: str | None = None) -> tuple[list, str | None]:
    """IMAP SEARCH keys for the criteria (all must hold) and the charset their text needs."""
    keys: list = []
    texts = []
    for name, value in (("TEXT", criteria.text), ("FROM", criteria.from_), ("SUBJECT", criteria.subject),
                        ("BODY", criteria.body)):
        for word in value.split():
            keys += [name, word]
            texts.append(word)
    for word in criteria.to.split():
        keys.append(["OR", ["TO", word], ["CC", word]])
        texts.append(word)
    if criteria.since:
        keys += ["SINCE", criteria.since]
    if criteria.before:
        keys += ["BEFORE", criteria.before]
    if criteria.has_attachment:
        # Dovecot marks attachments at save; another server is asked for multipart/mixed.
        keys.append(["OR", ["KEYWORD", HAS_ATTACHMENT],
                     ["HEADER", "Content-Type", "multipart/mixed", "UNKEYWORD", "$HasNoAttachment"]])
    if criteria.unseen or unseen_only:
        keys.append("UNSEEN")
    if criteria.starred or starred_only:
        keys.append("FLAGGED")
    for word in {criteria.keyword, keyword} - {None}:
        keys += ["KEYWORD", validate_keyword(word)]
    if any(any(char in "\r\n\0" for char in text) for text in texts):
        raise StoreError("search words cannot contain line breaks")
    charset = None if all(text.isascii() for text in texts) else "UTF-8"
    return keys or ["ALL"], charset


def _error(exc: IMAPClientError, folder: str | None = None) -> StoreError:
    """Map a refused command to the store's exceptions through the server's response code."""
    text = str(exc)
    if "[OVERQUOTA]" in text or "quota exceeded" in text.lower():
        return QuotaExceeded("the mailbox is over its storage quota")
    if folder is not None and ("[NONEXISTENT]" in text or "[TRYCREATE]" in text or "doesn't exist" in text):
        return FolderNotFound(f"folder {folder!r} does not exist")
    return StoreError(f"the mail server refused: {text}")


def _list_with_status(client: IMAPClient) -> tuple[list, dict[str, tuple[int, int]]]:
    """Every folder and its message and unseen counts in one round trip (LIST-STATUS, RFC 5819),
    where a STATUS per folder would cost one each. imapclient has no call for it: the command goes
    through its imaplib connection as its own list_folders does, and the answers through its parsers."""
    imap = client._imap
    typ, data = imap._simple_command("LIST", client._normalise_folder(""), client._normalise_folder("*"),
                                     "RETURN", "(SPECIAL-USE STATUS (MESSAGES UNSEEN))")
    client._checkok("list", typ, data)
    statuses = imap.untagged_responses.pop("STATUS", [])
    typ, data = imap._untagged_response(typ, data, "LIST")
    listed = client._proc_folder_list(data)
    counts = {}
    for name, items in chunk(parse_response([item for item in statuses if item]), size=2):
        name = str(name) if isinstance(name, int) else decode_utf7(name) if client.folder_encode else name
        values = dict(zip(items[::2], items[1::2]))
        counts["INBOX" if name.upper() == "INBOX" else name] = (values.get(b"MESSAGES", 0), values.get(b"UNSEEN", 0))
    return listed, counts
