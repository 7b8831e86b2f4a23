"""Dispatch keeps each Sent copy from the summary compose() returns, without parsing the message it
built. That summary must say what parsing the bytes says, or the Sent folder would list, thread and
search a message differently from the one that left."""
import base64

import pytest

from mailcore.sending.compose import compose
from mailcore.store.reading import read

pytestmark = pytest.mark.django_db

PAYLOADS = {
    "plain": {"to": ["bob@elsewhere.test"], "subject": "Hello", "body_text": "Just saying hi."},
    "html only, names and cc": {
        "to": ["Bob Brown <bob@elsewhere.test>", "carol@elsewhere.test"], "cc": ['"Doe, Jane" <jane@elsewhere.test>'],
        "reply_to": "Help Desk <help@example.test>", "subject": "  Quarterly   report ",
        "body_html": '<p>Numbers <a href="https://example.test/q3">here</a>.</p>'},
    "unicode and a long subject": {
        "to": ["Zoë Ünal <zoe@elsewhere.test>"], "subject": "Grüße aus Köln – " + "sehr lang " * 20,
        "body_text": "Ça va ?\nLigne deux.", "body_html": "<p>Ça va ?</p>"},
    "a reply in a thread": {
        "to": ["bob@elsewhere.test"], "subject": "Re: Plans", "body_text": "Yes.",
        "in_reply_to": "<a1@elsewhere.test>", "references": "<a0@elsewhere.test> <a1@elsewhere.test>"},
    "attachments": {
        "to": ["bob@elsewhere.test"], "subject": "Files", "body_text": "Two files.", "body_html": "<b>Two</b> files.",
        "attachments": [
            {"filename": "report.pdf", "content_type": "application/pdf",
             "content_base64": base64.b64encode(b"%PDF-1.4 " * 300).decode()},
            {"filename": "naïve.txt", "content_type": "text/csv", "content_base64": base64.b64encode(b"a,b\n").decode()},
        ]},
    "an invitation": {
        "to": ["bob@elsewhere.test"], "subject": "Invitation: Tasting", "body_text": "Come along.",
        "calendar": {"method": "REQUEST", "ical": "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n"}},
}


@pytest.mark.parametrize("name", list(PAYLOADS))
@pytest.mark.parametrize("display_name", ["", "Ann Smith", "Smith, Ann"])
def test_the_summary_of_a_composed_message_is_what_reading_it_finds(alice, ann, name, display_name):
    ann.display_name = display_name
    payload = {"cc": [], "reply_to": "", "body_html": "", "body_text": "", "attachments": [], **PAYLOADS[name]}
    built = compose(mailbox=ann, payload=payload, message_id="0b7e4c2a", rfc_message_id="<0b7e4c2a@example.test>",
                    track_opens=True)
    parsed, known = read(built.raw, headers=False), built.summary
    for field in ["message_id", "subject", "from_", "to", "cc", "reply_to", "date", "in_reply_to", "references",
                  "attachments", "has_attachments", "content_type"]:
        assert getattr(known, field) == getattr(parsed, field), field
    assert known.text.strip() == parsed.text.replace("\r\n", "\n").strip()
    assert known.html.strip() == parsed.html.replace("\r\n", "\n").strip()
