"""The owner sees the effect of their marks: after "Spam" on a sender's messages (and "Not spam" on
wanted ones, as Bayes needs both), the same sender's next message is scored differently for that
mailbox, and only for that mailbox. Scored as the listener asks rspamd (its connection facts, the
mailbox as Bayes scope)."""
import time
import uuid

import pytest

from mailcore.store.factory import store_for
from protection.learning import bayes_scope
from protection.rspamd import bayes_counts, check
from testkit.clients import new_key
from testkit.factories import make_mailbox, make_message
from testkit.rspamd import BAYES_MIN_LEARNS, GREYLIST_DELAY_SECONDS

pytestmark = pytest.mark.django_db

SENDER = "offers@shady-deals.test"
SPAM_WORDS = ("exclusive casino bonus jackpot winner claim prize crypto profit guaranteed pills discount "
              "unlock reward limited offer act now click here free money rich quick investment double")
HAM_WORDS = ("meeting agenda budget quarterly review notes project schedule office team lunch "
             "tuesday report draft slides minutes colleague feedback deadline plan")


def body(words: str, index: int) -> str:
    """Each message its own text: rspamd learns a message once, by its content."""
    words = words.split()
    picked = words[index % 3::2] + words[(index + 1) % 3::3]
    return f"{' '.join(picked)} {' '.join(words[:index + 4])} reference {uuid.uuid4().hex} number {index}"


def spam_body(index: int) -> str:
    return body(SPAM_WORDS, index)


def ham_body(index: int) -> str:
    return body(HAM_WORDS, index)


def score(mailbox, raw: bytes):
    """rspamd's whole score, as the listener asks for it; a first sight greylisted (scored 0, asked to
    come back) is asked again after the delay, as the sender's server would."""
    scan = None
    for _ in range(2):
        scan = check(raw, client_ip="192.0.2.25", helo="mail.shady-deals.test", envelope_from=SENDER,
                     recipients=[mailbox.address], deliver_to=bayes_scope(mailbox))
        if not scan.greylisted:
            return scan
        time.sleep(GREYLIST_DELAY_SECONDS + 0.5)
    return scan


def test_the_same_senders_next_message_scores_differently_after_spam(rspamd_settings, api, alice):
    mailbox = make_mailbox(alice.account, f"ann@d{uuid.uuid4().hex[:10]}.test")
    neighbour = make_mailbox(alice.account, f"bob@d{uuid.uuid4().hex[:10]}.test")
    store = store_for(mailbox)
    store.ensure_folders()
    count = BAYES_MIN_LEARNS + 1
    for index in range(count):
        store.append("INBOX", make_message(f"Offer {index}", spam_body(index), sender=f"Deals <{SENDER}>",
                                           to=mailbox.address))
        store.append("Junk", make_message(f"Notes {index}", ham_body(index), sender="Amy <amy@friends.test>",
                                          to=mailbox.address))
    next_message = make_message("Offer again", spam_body(count), sender=f"Deals <{SENDER}>", to=mailbox.address)
    before = score(mailbox, next_message)
    neighbour_before = score(neighbour, next_message)
    assert not before.greylisted and "BAYES_SPAM" not in before.symbols

    offers, notes = ([m.uid for m in store.list(folder).messages] for folder in ("INBOX", "Junk"))
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["mailboxes:read", "mailboxes:write"]))
    ham = api.post(f"/inbox/not-spam?email={mailbox.address}&folder=Junk", {"uids": notes}, format="json")
    spam = api.post(f"/inbox/spam?email={mailbox.address}", {"uids": offers}, format="json")
    assert spam.json()["learned"] == count and ham.json()["learned"] == count
    counts = bayes_counts(scope=mailbox.address)
    # rspamd skips a lesson its Bayes already agrees with: once it has enough of a class, the
    # sender's further offers are recognised as spam before they are taught
    assert counts["ham"] == count and BAYES_MIN_LEARNS <= counts["spam"] <= count

    after = score(mailbox, next_message)

    assert "BAYES_SPAM" in after.symbols
    assert after.score >= before.score + after.symbols["BAYES_SPAM"].score > before.score
    neighbour_after = score(neighbour, next_message)  # another mailbox's Bayes learned nothing
    assert "BAYES_SPAM" not in neighbour_after.symbols
    assert neighbour_after.score == pytest.approx(neighbour_before.score, abs=0.5)
