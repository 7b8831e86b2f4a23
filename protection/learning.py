"""Junk that learns: an owner's "Spam" and "Not spam" (webmail, REST, MCP; one message or many)
train rspamd's Bayes in the mailbox's own scope and file the messages in the same action: Spam into
Junk, Not spam into the Inbox. The messages are moved, never copied, so no action leaves a second
copy behind. Moves made from any other IMAP client learn through Dovecot's imapsieve
(docker/dovecot/learn-spam.sieve, learn-ham.sieve and rspamd-learn.sh), with the same scope.

On the Dovecot store the move below also runs imapsieve's script: rspamd remembers what it learned
(its learn cache), so the second lesson of the same message is a no-op, never a double count."""
import logging
from dataclasses import dataclass

from django.conf import settings

from mailcore.inbox.services import inbox_folders
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import MessageNotFound
from mailcore.store.factory import store_for
from protection.rspamd import ScannerUnavailable, learn

log = logging.getLogger(__name__)

MAX_MESSAGES = 5000  # the webmail's "all matching" bulk limit
JUNK_KEYWORD, NOT_JUNK_KEYWORD = "$Junk", "$NotJunk"  # the keywords mail clients read (Thunderbird, Apple Mail)


class Learning:
    """What rspamd made of the lesson."""

    DONE = "learned"  # every message was learned (or had been before)
    UNAVAILABLE = "unavailable"  # rspamd could not be reached: the messages were filed, not learned
    OFF = "off"  # no scanner configured here


@dataclass(frozen=True)
class Learned:
    folder: str  # where the messages are now
    count: int  # messages filed (those of the UIDs that exist)
    learned: int  # of those, how many rspamd learned
    learning: str  # a Learning value
    uid: int | None = None  # the message's UID in `folder`, when there was one message


def bayes_scope(mailbox: Mailbox) -> str:
    """The Bayes scope of a mailbox (rspamd's per_user `Deliver-To`): its address, as Dovecot names
    the same user when an IMAP move learns (imapsieve's `imap.user`)."""
    return mailbox.address.lower()


def junk_folder(mailbox: Mailbox) -> str:
    """The folder marked \\Junk, else "Junk" (the default folders always have it)."""
    return next((found.name for found in inbox_folders(mailbox=mailbox) if found.special_use == "\\Junk"), "Junk")


def messages_mark_spam(*, mailbox: Mailbox, folder: str, uids: list[int]) -> Learned:
    """Spam: learned as spam for this mailbox, moved to Junk."""
    return _learn_and_file(mailbox=mailbox, folder=folder, uids=uids, spam=True)


def messages_mark_not_spam(*, mailbox: Mailbox, folder: str, uids: list[int]) -> Learned:
    """Not spam: learned as ham for this mailbox, moved to the Inbox."""
    return _learn_and_file(mailbox=mailbox, folder=folder, uids=uids, spam=False)


def _learn_and_file(*, mailbox: Mailbox, folder: str, uids: list[int], spam: bool) -> Learned:
    target = junk_folder(mailbox) if spam else "INBOX"
    store = store_for(mailbox)
    raws: dict[int, bytes] = {}
    for uid in dict.fromkeys(uids):
        try:
            raws[uid] = store.fetch(folder, uid).raw
        except MessageNotFound:
            continue  # gone meanwhile (another client moved it): nothing to learn or file
    # A connected mailbox's mail is filtered by its own provider: it is only filed.
    on = bool(settings.RSPAMD_CONTROLLER_URL) and mailbox.is_managed
    learned, learning = 0, Learning.DONE if on else Learning.OFF
    for raw in raws.values() if learning == Learning.DONE else ():
        try:
            learn(raw, spam=spam, scope=bayes_scope(mailbox))
        except ScannerUnavailable as unavailable:
            learning = Learning.UNAVAILABLE
            log.warning("learning %s for %s failed: %s", "spam" if spam else "ham", mailbox.address, unavailable)
            break
        learned += 1
    found = list(raws)
    if not found:
        return Learned(folder=target if folder == target else folder, count=0, learned=0, learning=learning)
    add, remove = (JUNK_KEYWORD, NOT_JUNK_KEYWORD) if spam else (NOT_JUNK_KEYWORD, JUNK_KEYWORD)
    store.set_flags_many(folder, found, add_keywords=(add,), remove_keywords=(remove,))
    uid = found[0] if len(found) == 1 else None
    if folder != target:
        if uid is not None:
            uid = store.move(folder, uid, target)
        else:
            store.move_many(folder, found, target)
    return Learned(folder=target, count=len(found), learned=learned, learning=learning, uid=uid)


def learning_outcome(learned: Learned, *, spam: bool) -> str:
    """What the owner is told after Spam or Not spam, in plain words."""
    count = learned.count
    what = "This message" if count == 1 else f"{count} messages"
    verb = "was" if count == 1 else "were"
    if spam:
        filed = f"{what} {verb} marked as spam and moved to {learned.folder}."
    else:
        filed = f"{what} {verb} marked as not spam and moved to the Inbox."
    if learned.learning == Learning.DONE:
        effect = ("Your spam filter learned from it" if count == 1 else "Your spam filter learned from them")
        return f"{filed} {effect}: similar mail will {'go to Junk' if spam else 'stay in your Inbox'}."
    if learned.learning == Learning.OFF:
        return f"{filed} Spam filtering is off on this server, so nothing was learned."
    return f"{filed} The spam filter could not be reached, so it did not learn this time."
