"""Thread ids for email.received: the same for every message of a conversation.

As the spec says, a new thread's id is the first 16 hex characters of SHA-256 of its normalised
subject, and a reply's comes from its References and In-Reply-To headers: the thread of the first
message it names that we have seen (ThreadIndex remembers each Message-ID's thread), else the
hash of the first Message-ID it names. Each message's own Message-ID is then recorded, so the
replies to it join its thread.

Both queries are written by hand: they run for every message the listener takes, and the ORM
spent more time building them than the database spent running them.
"""
import hashlib
import re

from django.db import connection
from django.utils import timezone

from mailcore.store.reading import message_ids

# Reply and forward prefixes in the languages mail clients commonly use, with counters such as
# "Re[2]:" or "Re(2):" and a space before the colon (French clients).
_PREFIX = re.compile(
    r"^\s*(?:(?:re|fwd?|aw|wg|sv|vs|antw|tr|rv|odp|r)(?:\s*[\[(]\d+[\])])?\s*:|\[[^\]]*\])\s*",
    re.IGNORECASE,
)


def normalise_subject(subject: str) -> str:
    """Strip leading reply/forward prefixes and [list tags] repeatedly, collapse spaces, casefold."""
    text = " ".join((subject or "").split())
    while True:
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return " ".join(text.split()).casefold()


def _hash16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def thread_id(*, in_reply_to: str | None, references: str | None, subject: str, account=None) -> str:
    """The thread of a message (a read); with an account, the threads of messages it names are looked up."""
    named = list(dict.fromkeys(message_ids(references) + message_ids(in_reply_to)))
    thread = None
    if account is not None and named:
        known = _known_threads(account.pk, named)
        thread = next((known[m] for m in named if m in known), None)
    return thread or _hash16(named[0] if named else normalise_subject(subject))


def thread_assign(*, account, message_id: str | None, in_reply_to: str | None, references: str | None,
                  subject: str) -> str:
    """The message's thread, recorded under its own Message-ID so the replies to it join (a write)."""
    thread = thread_id(in_reply_to=in_reply_to, references=references, subject=subject, account=account)
    own = message_ids(message_id)
    if own:  # one INSERT that leaves an existing row as it is (the first thread recorded stays)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {_table()} (account_id, message_id, thread_id, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (account_id, message_id) DO NOTHING",
                [account.pk, own[0], thread, connection.ops.adapt_datetimefield_value(timezone.now())])
    return thread


def _known_threads(account_id: int, message_ids_named: list[str]) -> dict[str, str]:
    """Message-ID -> thread, for those of the named messages the account has seen."""
    placeholders = ", ".join(["%s"] * len(message_ids_named))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT message_id, thread_id FROM {_table()} WHERE account_id = %s "
                       f"AND message_id IN ({placeholders})", [account_id, *message_ids_named])
        return dict(cursor.fetchall())


def _table() -> str:
    from mailcore.inbound.models import ThreadIndex

    return connection.ops.quote_name(ThreadIndex._meta.db_table)


def is_reply(*, in_reply_to: str | None, references: str | None) -> bool:
    return bool((in_reply_to or "").strip() or (references or "").strip())
