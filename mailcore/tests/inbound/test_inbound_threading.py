"""Thread ids: one per conversation, from References/In-Reply-To, else the normalised subject."""
import hashlib

import pytest

from mailcore.inbound.threads import is_reply, normalise_subject, thread_assign, thread_id


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(("subject", "normalised"), [
    ("Re: RE: Fwd: Lunch   plans ", "lunch plans"),
    ("AW: SV: Fw: Re[2]: Re (3): Hello", "hello"),
    ("RE : Réunion", "réunion"),
    ("[dev] Re: [dev] Build broken", "build broken"),
    ("Reminder: rent", "reminder: rent"),
    ("Re:", ""),
    ("STRASSE", "strasse"),
    ("Straße", "strasse"),
])
def test_a_subject_is_normalised_by_stripping_prefixes_and_tags_and_casefolding(subject, normalised):
    assert normalise_subject(subject) == normalised


def test_the_first_reference_is_the_thread_root():
    root = thread_id(in_reply_to="<b@x>", references="<a@x>\r\n <b@x>", subject="Re: Hi")
    assert root == sha16("<a@x>")


def test_without_references_in_reply_to_is_the_root():
    root = thread_id(in_reply_to="Your mail of Monday <a@x>", references="", subject="Re: Hi")
    assert root == sha16("<a@x>")


def test_a_new_thread_is_keyed_by_its_normalised_subject():
    assert thread_id(in_reply_to=None, references="", subject="Re: [team] Hi  there") == sha16("hi there")
    assert thread_id(in_reply_to="garbage", references="", subject="Hi there") == sha16("hi there")


@pytest.mark.django_db
def test_replies_join_the_thread_of_the_message_they_answer(alice):
    account = alice.account
    first = thread_assign(message_id="<a@x>", in_reply_to=None, references="", subject="Lunch?", account=account)
    reply = thread_assign(message_id="<b@x>", in_reply_to="<a@x>", references="", subject="Re: Lunch?", account=account)
    again = thread_assign(message_id="<c@x>", in_reply_to="<b@x>", references="<a@x> <b@x>", subject="Re: Re: Lunch?",
                      account=account)
    late = thread_assign(message_id="<d@x>", in_reply_to="<c@x>", references="", subject="Other subject", account=account)
    assert first == reply == again == late == sha16("lunch?")


@pytest.mark.parametrize(("in_reply_to", "references", "expected"), [
    (None, "", False), ("<a@x>", "", True), (None, "<a@x>", True), ("  ", " ", False),
])
def test_a_reply_is_mail_with_in_reply_to_or_references(in_reply_to, references, expected):
    assert is_reply(in_reply_to=in_reply_to, references=references) is expected
