"""Writing mail in the webmail as its owner does: a plain form without JavaScript (multipart POST),
rich text sanitized on the server, replies and forwards with quoting and threading headers, drafts
autosaved to the Drafts folder, uploads, undo-send and send-later through mail_send's hold queue,
and the errors a user meets (quota, full mailbox, attachment too large, bad address). Mail leaves
through the real dispatch worker to a real SMTP server on loopback. The tests that touch the mail
store run twice: on the embedded store and on the real Dovecot (through the master user)."""
import email
import re
import uuid
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from html import unescape
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from mailcore.accounts.models import Plan
from mailcore.mailboxes.models import Alias
from mailcore.mailboxes.services import mailbox_set_identity
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from webmail.drafts import Composition, draft_send
from mailcore.sending.services import MailboxLocked
from mailcore.store.factory import store_for
from mailcore.usage.models import MailboxDailyUsage
from testkit.dovecot import use_store
from testkit.factories import make_mailbox

PASSWORD = "mailbox-password-1"
COMPOSE = "/webmail/compose/"
AUTOSAVE = "/webmail/compose/autosave/"


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db),
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def owner(request, settings, plans, alice):
    """The signed-in mailbox (with a display name and a signature), on the store named by the
    parameter. On Dovecot a mailbox's mail outlives the test database: each test gets its own domain."""
    mailbox = make_mailbox(alice.account, f"ann@{use_store(request, settings)}", password=PASSWORD)
    mailbox = mailbox_set_identity(mailbox=mailbox, display_name="Ann Example",
                                   signature_html="<p>Ann &mdash; <b>Example</b></p>")
    store_for(mailbox).ensure_folders()
    mailbox.store_kind = request.param
    return mailbox


@pytest.fixture
def embedded_owner(settings, alice):
    settings.MAIL_STORE = "embedded"
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    return mailbox_set_identity(mailbox=mailbox, display_name="Ann Example")


def sign_in(client, mailbox):
    response = client.post("/webmail/", {"address": mailbox.address, "password": PASSWORD})
    assert response.status_code == 302
    return client


@pytest.fixture
def signed_in(client, owner):
    return sign_in(client, owner)


def form(**fields) -> dict:
    """A compose form as the browser posts it without JavaScript (plain text, no undo window)."""
    return {"to": "", "cc": "", "bcc": "", "subject": "", "body": "", "body_html": "", "format": "plain",
            "undo": "0", "action": "send", **fields}


def parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


def original(mailbox, *, subject="Lunch", body="Lunch at noon?\nBring Carol.", sender="Amy <amy@remote.test>",
             to=None, cc="Carol <carol@remote.test>", html=None, message_id="<orig-1@remote.test>",
             references="<root-1@remote.test>", reply_to=None, attachments=()) -> int:
    """A message delivered to the mailbox's Inbox; returns its UID."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to or f"Ann <{mailbox.address}>"
    if cc:
        message["Cc"] = cc
    if reply_to:
        message["Reply-To"] = reply_to
    message["Subject"] = subject
    message["Date"] = "Mon, 03 Mar 2025 10:15:00 +0000"
    message["Message-ID"] = message_id
    if references:
        message["References"] = references
    message.set_content(body)
    if html:
        message.add_alternative(html, subtype="html")
    for filename, content_type, payload in attachments:
        maintype, subtype = content_type.split("/")
        message.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return store_for(mailbox).deliver(message.as_bytes(), recipient=mailbox.address,
                                      envelope_from="amy@remote.test").uid or store_for(mailbox).list().messages[0].uid


def value_of(page: str, name: str) -> str:
    """The value of a form field in a rendered page (input value or textarea text), unescaped."""
    found = re.search(rf'<textarea[^>]*name="{name}"[^>]*>(.*?)</textarea>', page, re.DOTALL)
    if found:
        text = unescape(found.group(1))
        return text[1:] if text.startswith("\n") else text  # Django's textarea starts with one line break
    found = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
    assert found, f"no field {name}"
    attribute = re.search(r'value="([^"]*)"', found.group(0))
    return unescape(attribute.group(1)) if attribute else ""


def drafts(mailbox):
    return store_for(mailbox).list("Drafts").messages


def draft_uid_in(page: str) -> int:
    return int(re.search(r'<input type="hidden" name="draft" value="(\d+)">', page).group(1))


# The page --------------------------------------------------------------------------------------

def test_the_page_is_a_plain_multipart_form_with_the_identity_and_signature_note(signed_in, owner):
    page = signed_in.get(COMPOSE).content.decode()

    assert 'enctype="multipart/form-data"' in page and 'method="post"' in page
    assert f"Ann Example &lt;{owner.address}&gt;" in page
    assert re.search(r'<textarea name="body"[^>]*>', page)
    assert re.search(r'<input type="file" name="files" multiple[^>]*>', page)
    assert "Your signature is added below your message when it is sent:" in page and "Ann — Example" in page
    assert '<option value="10" selected>10 seconds</option>' in page  # the default undo window
    first_button = re.search(r'<button type="submit" name="action" value="(\w+)"', page).group(1)
    assert first_button == "save"  # Enter in a field saves the draft, never sends
    assert 'src="/static/vendor/squire/squire.js"' in page and "<script>" not in page  # no inline script (CSP)


def test_a_new_message_can_be_filled_in_from_the_address(signed_in, owner):
    page = signed_in.get(COMPOSE, {"to": "amy@remote.test", "subject": "Hello"}).content.decode()

    assert (value_of(page, "to"), value_of(page, "subject"), value_of(page, "body")) == ("amy@remote.test", "Hello", "")


def test_posts_need_the_csrf_token(signed_in, owner):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.cookies = signed_in.cookies  # signed in, but posting without the form's token
    assert browser.post(COMPOSE, form(to="bob@remote.test", body="x")).status_code == 403
    assert browser.post(AUTOSAVE, form(subject="x")).status_code == 403
    assert OutboundMessage.objects.count() == 0 and drafts(owner) == []


def test_the_compose_pages_need_a_signed_in_owner(client, db):
    for url in (COMPOSE, "/webmail/compose/reply/INBOX/1/", "/webmail/compose/drafts/1/", "/webmail/compose/sent/1/"):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith("/webmail/?next=")
    assert client.post(AUTOSAVE, form()).status_code == 302


# Sending ---------------------------------------------------------------------------------------

def test_plain_text_sent_without_javascript_is_queued_then_delivered_with_its_headers(signed_in, owner, relay):
    response = signed_in.post(COMPOSE, form(to='Bob <bob@remote.test>, "Doe, Jo" <jo@remote.test>',
                                            cc="carol@remote.test", bcc="dave@remote.test", subject="Plans",
                                            body="Hi Bob,\r\nsee you at 8.\r\n"))

    message = OutboundMessage.objects.get()
    assert response.status_code == 302 and response.url == f"/webmail/compose/sent/{message.pk}/"
    assert message.status == "queued" and message.mailbox == owner
    assert message.payload == {"to": ["bob@remote.test", "jo@remote.test"], "cc": ["carol@remote.test"],
                               "bcc": ["dave@remote.test"], "reply_to": "", "subject": "Plans", "body_html": "",
                               "body_text": "Hi Bob,\nsee you at 8.\n", "attachments": [],
                               "pending": ["bob@remote.test", "jo@remote.test", "carol@remote.test",
                                           "dave@remote.test"], "webmail": True}
    assert outbound_dispatch_due() == 1
    [received] = relay.messages
    assert sorted(received.rcpt_tos) == ["bob@remote.test", "carol@remote.test", "dave@remote.test", "jo@remote.test"]
    delivered = parse(received.content)
    assert delivered["From"] == f"Ann Example <{owner.address}>"
    assert (delivered["To"], delivered["Cc"], delivered["Bcc"]) == ("bob@remote.test, jo@remote.test",
                                                                    "carol@remote.test", None)
    assert delivered["Subject"] == "Plans" and delivered["In-Reply-To"] is None
    assert delivered.get_content_type() == "text/plain"
    assert delivered.get_content() == "Hi Bob,\r\nsee you at 8.\r\n\r\n-- \r\nAnn \u2014 Example\r\n"
    assert [m.subject for m in store_for(owner).list("Sent").messages] == ["Plans"]
    page = signed_in.get(response.url).content.decode()
    assert "was sent" in page and "A copy is in your Sent folder." in page


def test_rich_text_is_sanitized_on_the_server_and_no_script_leaves(signed_in, owner, relay):
    typed = ('<div>Hi <b>Bob</b>, <a href="https://example.org/a">the plan</a></div><script>alert(1)</script>'
             '<img src="x" onerror="alert(2)"><a href="javascript:alert(3)">click</a>'
             '<div style="color: red; position: fixed">red</div><iframe src="https://evil.test"></iframe>')
    signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Rich", format="rich", body_html=typed,
                                 body="ignored text version"))

    html = OutboundMessage.objects.get().payload["body_html"]
    assert "<b>Bob</b>" in html and 'href="https://example.org/a"' in html
    assert '<div style="color:red">red</div>' in html
    for gone in ("<script", "alert(1)", "onerror", "javascript:", "position", "<iframe"):
        assert gone not in html
    outbound_dispatch_due()
    delivered = parse(relay.messages[0].content)
    assert [part.get_content_type() for part in delivered.iter_parts()] == ["text/plain", "text/html"]
    assert b"<script" not in relay.messages[0].content and b"onerror" not in relay.messages[0].content
    assert delivered.get_body(("plain",)).get_content().startswith("Hi Bob, the plan (https://example.org/a)\r\n")  # the link keeps its URL
    assert "Ann — <b>Example</b>" in delivered.get_body(("html",)).get_content()  # the signature, added at dispatch


def test_a_bad_address_is_shown_next_to_its_field_and_nothing_is_queued(signed_in, owner):
    response = signed_in.post(COMPOSE, form(to="bob@, amy@remote.test", cc="nobody", subject="Hi", body=""))

    assert response.status_code == 422
    page = response.content.decode()
    to_field = page[page.index('for="id_to"'):page.index('for="id_cc"')]
    assert "&#x27;bob@&#x27; is not a valid email address" in to_field
    assert "&#x27;nobody&#x27; is not an email address" in page[page.index('for="id_cc"'):]
    assert "Write a message before sending." in page
    assert value_of(page, "to") == "bob@, amy@remote.test"  # what was typed stays
    assert OutboundMessage.objects.count() == 0


def test_an_empty_rich_editor_is_no_message(signed_in, owner):
    response = signed_in.post(COMPOSE, form(to="bob@remote.test", format="rich", body_html="<div><br></div>"))

    assert response.status_code == 422 and "Write a message before sending." in response.content.decode()
    assert OutboundMessage.objects.count() == 0


def test_the_daily_send_quota_is_shown_plainly(client, plans, embedded_owner, relay):
    embedded_owner.plan = Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=1, sends_per_hour=1,
                                              storage_mb=1, attachment_max_mb=1)
    embedded_owner.save()
    sign_in(client, embedded_owner)
    assert client.post(COMPOSE, form(to="bob@remote.test", subject="One", body="x")).status_code == 302

    response = client.post(COMPOSE, form(to="bob@remote.test", subject="Two", body="y"))

    assert response.status_code == 429
    page = response.content.decode()
    assert 'role="alert"' in page and "has used its daily quota of 1 sends (Tiny plan); it resets at 00:00 UTC." in page
    assert value_of(page, "subject") == "Two"
    assert list(OutboundMessage.objects.values_list("payload__subject", flat=True)) == ["One"]


def test_an_attachment_over_the_plans_cap_is_refused_at_the_field(client, plans, embedded_owner):
    embedded_owner.plan = Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=5, sends_per_hour=5,
                                              storage_mb=10, attachment_max_mb=1)
    embedded_owner.save()
    sign_in(client, embedded_owner)
    big = SimpleUploadedFile("big.bin", b"x" * (1024 * 1024 + 1), content_type="application/octet-stream")

    response = client.post(COMPOSE, form(to="bob@remote.test", subject="Big", body="x", files=big))

    assert response.status_code == 422
    page = response.content.decode()
    files_field = page[page.index('for="id_files"'):page.index("data-uploads")]
    assert "Attachments total 1.0 MB; your plan allows 1 MB per message" in files_field
    assert "The files you chose could not be kept; choose them again." in files_field
    assert OutboundMessage.objects.count() == 0 and drafts(embedded_owner) == []


def test_a_suspended_mailbox_sends_nothing(signed_in, owner):
    owner.is_active = False
    owner.save()

    response = signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Hi", body="x"))

    assert response.status_code == 302 and response.url.startswith("/webmail/?next=")  # signed out at once
    assert OutboundMessage.objects.count() == 0
    with pytest.raises(MailboxLocked, match="is suspended and cannot send mail"):  # what the page would say
        draft_send(mailbox=owner, composition=Composition(to="bob@remote.test", body_text="x"), attachments=[])


# Replies and forwards ---------------------------------------------------------------------------

def test_a_reply_quotes_the_original_and_carries_the_threading_headers(signed_in, owner, relay):
    uid = original(owner, reply_to="Amy Work <amy@work.test>")

    page = signed_in.get(f"/webmail/compose/reply/INBOX/{uid}/").content.decode()

    assert "<h1 class=\"page-header__title\">Reply</h1>" in page
    assert value_of(page, "to") == "Amy Work <amy@work.test>"  # Reply-To wins over From
    assert value_of(page, "cc") == ""
    assert value_of(page, "subject") == "Re: Lunch"
    assert value_of(page, "body") == ("\n\nOn Mon, 3 Mar 2025 at 10:15 UTC, Amy <amy@remote.test> wrote:\n"
                                      "> Lunch at noon?\n> Bring Carol.\n")
    assert value_of(page, "in_reply_to") == "<orig-1@remote.test>"
    assert value_of(page, "references") == "<root-1@remote.test> <orig-1@remote.test>"
    assert "<blockquote>" in value_of(page, "body_html")

    response = signed_in.post(COMPOSE, form(
        to=value_of(page, "to"), subject=value_of(page, "subject"), body="Yes!" + value_of(page, "body"),
        in_reply_to=value_of(page, "in_reply_to"), references=value_of(page, "references")))
    assert response.status_code == 302
    outbound_dispatch_due()
    delivered = parse(relay.messages[0].content)
    assert delivered["Subject"] == "Re: Lunch"
    assert delivered["In-Reply-To"] == "<orig-1@remote.test>"
    assert delivered["References"] == "<root-1@remote.test> <orig-1@remote.test>"
    assert delivered.get_content().startswith("Yes!\r\n\r\nOn Mon, 3 Mar 2025 at 10:15 UTC, Amy <amy@remote.test> "
                                              "wrote:\r\n> Lunch at noon?\r\n")


def test_reply_all_keeps_everyone_but_the_owners_own_addresses(signed_in, owner):
    Alias.objects.create(mailbox=owner, address=f"sales@{owner.address.partition('@')[2]}")
    domain = owner.address.partition("@")[2]
    uid = original(owner, subject="Re: Lunch", references=None,
                   to=f"Ann <{owner.address}>, sales@{domain}, Dave <dave@remote.test>",
                   cc=f"Carol <carol@remote.test>, ann+lists@{domain}, amy@remote.test")

    page = signed_in.get(f"/webmail/compose/reply-all/INBOX/{uid}/").content.decode()

    assert value_of(page, "to") == "Amy <amy@remote.test>, Dave <dave@remote.test>"
    assert value_of(page, "cc") == "Carol <carol@remote.test>"
    assert value_of(page, "subject") == "Re: Lunch"  # never "Re: Re:"
    assert value_of(page, "references") == "<orig-1@remote.test>"


def test_replying_to_a_message_of_ones_own_writes_to_its_recipients(signed_in, owner):
    uid = original(owner, sender=f"Ann Example <{owner.address}>", to="Bob <bob@remote.test>", cc=None)

    page = signed_in.get(f"/webmail/compose/reply/INBOX/{uid}/").content.decode()

    assert value_of(page, "to") == "Bob <bob@remote.test>"


def test_a_forward_carries_the_original_headers_and_attachments(signed_in, owner, relay):
    pdf = bytes(range(256)) * 40
    uid = original(owner, subject="Report", html="<p>See <b>attached</b>.</p><script>x()</script>",
                   attachments=[("report.pdf", "application/pdf", pdf)])

    page = signed_in.get(f"/webmail/compose/forward/INBOX/{uid}/").content.decode()

    assert value_of(page, "subject") == "Fwd: Report"
    assert value_of(page, "to") == "" and value_of(page, "in_reply_to") == ""
    body = value_of(page, "body")
    assert body.startswith("\n\n---------- Forwarded message ----------\nFrom: Amy <amy@remote.test>\n"
                           "Date: Mon, 3 Mar 2025 at 10:15 UTC\nSubject: Report\n")
    assert "See attached" not in body and "Lunch at noon?" in body  # the text alternative is quoted
    assert "<b>attached</b>" in value_of(page, "body_html") and "x()" not in value_of(page, "body_html")
    index = re.search(r'name="forward_keep" value="(\d+)"[^>]*checked', page).group(1)
    assert "report.pdf" in page

    signed_in.post(COMPOSE, form(to="eve@remote.test", subject="Fwd: Report", body=body,
                                 forward_folder="INBOX", forward_uid=str(uid), forward_keep=index,
                                 references=value_of(page, "references")))
    outbound_dispatch_due()
    delivered = parse(relay.messages[0].content)
    assert delivered["Subject"] == "Fwd: Report"
    assert delivered["References"] == "<root-1@remote.test> <orig-1@remote.test>"
    [attachment] = list(delivered.iter_attachments())
    assert (attachment.get_filename(), attachment.get_content_type(), attachment.get_content()) == (
        "report.pdf", "application/pdf", pdf)


def test_another_mailboxs_messages_and_sends_are_not_found(signed_in, owner, charlie):
    other = make_mailbox(charlie.account, f"zed@z{uuid.uuid4().hex[:8]}.test")
    theirs = draft_send(mailbox=other, composition=Composition(to="bob@remote.test", body_text="x"),
                        attachments=[], unsend_window=10)

    assert signed_in.get(f"/webmail/compose/sent/{theirs.pk}/").status_code == 404
    assert signed_in.post(f"/webmail/compose/sent/{theirs.pk}/undo/").status_code == 404
    assert signed_in.get("/webmail/compose/reply/INBOX/999/").status_code == 404
    assert signed_in.get("/webmail/compose/forward/Nowhere/1/").status_code == 404
    assert signed_in.get("/webmail/compose/drafts/999/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == "scheduled"


def test_when_the_mail_server_is_away_the_page_says_so(client, settings, embedded_owner):
    from testkit.smtp_sink import free_port

    settings.MAIL_STORE, settings.IMAP_HOST, settings.IMAP_PORT, settings.IMAP_TIMEOUT_SECONDS = (
        "imap", "127.0.0.1", free_port(), 2)
    sign_in(client, embedded_owner)

    reply = client.get("/webmail/compose/reply/INBOX/1/")
    saved = client.post(COMPOSE, form(action="save", subject="Kept?", body="x"))

    assert reply.status_code == 503 and "The mail server could not be reached" in reply.content.decode()
    assert saved.status_code == 422 and "The mail server could not be reached" in saved.content.decode()
    assert value_of(saved.content.decode(), "subject") == "Kept?"


# Drafts ----------------------------------------------------------------------------------------

def test_autosave_creates_one_draft_then_replaces_it(signed_in, owner):
    first = signed_in.post(AUTOSAVE, form(to="bob@remote.test", subject="Thinking", body="First words",
                                          bcc="boss@remote.test"))

    assert first.status_code == 200
    uid = draft_uid_in(first.content.decode())
    assert "Draft saved at" in first.content.decode()
    [saved] = drafts(owner)
    assert (saved.uid, saved.subject) == (uid, "Thinking")
    stored = store_for(owner).fetch("Drafts", uid)
    if owner.store_kind == "imap":  # the embedded store keeps no \Draft flag
        assert "\\Draft" in stored.flags
    raw = parse(stored.raw)
    assert raw["Bcc"] == "boss@remote.test" and raw["From"] == f"Ann Example <{owner.address}>"

    second = signed_in.post(AUTOSAVE, form(to="bob@remote.test", subject="Thought", body="More words",
                                           draft=str(uid)))

    new_uid = draft_uid_in(second.content.decode())
    assert new_uid != uid
    assert [(m.uid, m.subject) for m in drafts(owner)] == [(new_uid, "Thought")]
    page = signed_in.get(f"/webmail/compose/drafts/{new_uid}/").content.decode()
    assert value_of(page, "subject") == "Thought" and value_of(page, "body") == "More words\n"
    assert draft_uid_in(page) == new_uid


def test_save_draft_without_javascript_then_send_it_removes_it(signed_in, owner, relay):
    response = signed_in.post(COMPOSE, form(action="save", to="bob@remote.test", subject="Later", body="Draft"))

    [saved] = drafts(owner)
    assert response.status_code == 302 and response.url == f"/webmail/compose/drafts/{saved.uid}/"
    page = signed_in.get(response.url).content.decode()
    assert "Draft saved." in page and value_of(page, "subject") == "Later"

    signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Later", body="Done", draft=str(saved.uid)))

    assert drafts(owner) == []
    outbound_dispatch_due()
    assert parse(relay.messages[0].content)["Subject"] == "Later"


def test_rich_drafts_keep_their_html_sanitized(signed_in, owner):
    response = signed_in.post(AUTOSAVE, form(subject="Rich", format="rich",
                                             body_html="<div><i>soft</i></div><script>alert(1)</script>"))

    uid = draft_uid_in(response.content.decode())
    assert b"<script" not in store_for(owner).fetch("Drafts", uid).raw
    page = signed_in.get(f"/webmail/compose/drafts/{uid}/").content.decode()
    assert value_of(page, "body_html") == "<div><i>soft</i></div>"
    assert 'data-rich="true"' in page


def test_discard_removes_the_draft(signed_in, owner):
    uid = draft_uid_in(signed_in.post(AUTOSAVE, form(subject="Never mind")).content.decode())

    response = signed_in.post(COMPOSE, form(action="discard", draft=str(uid)))

    assert response.status_code == 302 and response.url == "/webmail/inbox/"
    assert drafts(owner) == []


def test_an_uploaded_attachment_goes_into_the_draft_and_out_with_the_message(signed_in, owner, relay):
    upload = SimpleUploadedFile("notes.txt", b"remember the milk\n", content_type="text/plain")

    response = signed_in.post(AUTOSAVE, form(to="bob@remote.test", subject="Notes", body="Attached.", files=upload))

    page = response.content.decode()
    assert response.status_code == 200 and "notes.txt" in page
    uid = draft_uid_in(page)
    index = re.search(r'name="keep" value="(\d+)" id="keep-\d+" checked', page).group(1)
    photo = SimpleUploadedFile("photo.jpg", b"\xff\xd8\xff" + b"\x00" * 100, content_type="image/jpeg")

    signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Notes", body="Attached.", draft=str(uid), keep=index,
                                 files=photo))

    assert drafts(owner) == []
    outbound_dispatch_due()
    delivered = parse(relay.messages[0].content)
    assert [(a.get_filename(), a.get_content_type(), a.get_content()) for a in delivered.iter_attachments()] == [
        ("notes.txt", "text/plain", "remember the milk\n"),
        ("photo.jpg", "image/jpeg", b"\xff\xd8\xff" + b"\x00" * 100)]


def test_an_unticked_attachment_is_left_out(signed_in, owner, relay):
    page = signed_in.post(AUTOSAVE, form(subject="Two files", files=[
        SimpleUploadedFile("a.txt", b"a", content_type="text/plain"),
        SimpleUploadedFile("b.txt", b"b", content_type="text/plain")])).content.decode()
    uid = draft_uid_in(page)
    indexes = re.findall(r'name="keep" value="(\d+)"', page)
    assert len(indexes) == 2

    signed_in.post(COMPOSE, form(to="bob@remote.test", subject="One file", body="x", draft=str(uid), keep=indexes[1]))

    outbound_dispatch_due()
    assert [a.get_filename() for a in parse(relay.messages[0].content).iter_attachments()] == ["b.txt"]


def test_a_full_mailbox_cannot_keep_a_draft_and_says_so(client, plans, embedded_owner):
    embedded_owner.plan = Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=5, sends_per_hour=5,
                                              storage_mb=1, attachment_max_mb=1)
    embedded_owner.save()
    store_for(embedded_owner).append("INBOX", b"Subject: big\r\n\r\n" + b"x" * (1024 * 1024 - 100))
    sign_in(client, embedded_owner)

    response = client.post(COMPOSE, form(action="save", subject="No room", body="y" * 500))

    assert response.status_code == 422
    assert "Your mailbox is full, so the draft could not be kept" in response.content.decode()
    autosaved = client.post(AUTOSAVE, form(subject="No room", body="y" * 500))
    assert autosaved.status_code == 507 and "Your mailbox is full" in autosaved.content.decode()
    assert drafts(embedded_owner) == []


# Undo and send later ---------------------------------------------------------------------------

def test_undo_cancels_the_send_and_brings_the_draft_back(signed_in, owner, relay):
    response = signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Oops", body="Not yet", undo="10",
                                            in_reply_to="<orig-1@remote.test>", references="<orig-1@remote.test>",
                                            files=SimpleUploadedFile("a.txt", b"abc", content_type="text/plain")))
    message = OutboundMessage.objects.get()
    assert (message.status, message.unsend_window) == ("scheduled", 10)
    assert response.cookies["mw_undo"].value == "10"
    page = signed_in.get(response.url).content.decode()
    assert "Sending in 10 s" in page or "Sending in 9 s" in page
    assert f'action="/webmail/compose/sent/{message.pk}/undo/"' in page

    undone = signed_in.post(f"/webmail/compose/sent/{message.pk}/undo/")

    [draft] = drafts(owner)
    assert undone.status_code == 302 and undone.url == f"/webmail/compose/drafts/{draft.uid}/"
    message.refresh_from_db()
    assert message.status == "cancelled"
    assert MailboxDailyUsage.objects.get(mailbox=owner).sends == 0  # the quota was given back
    page = signed_in.get(undone.url).content.decode()
    assert "Sending cancelled. Your message is back in Drafts." in page
    assert (value_of(page, "to"), value_of(page, "subject"), value_of(page, "body")) == (
        "bob@remote.test", "Oops", "Not yet\n")
    assert value_of(page, "in_reply_to") == "<orig-1@remote.test>" and "a.txt" in page
    with time_machine.travel(timezone.now() + timedelta(seconds=60)):
        assert outbound_dispatch_due() == 0
    assert relay.messages == []
    assert signed_in.get(COMPOSE).content.decode().count('<option value="10" selected>') == 1  # remembered


def test_undo_after_the_message_left_is_too_late(signed_in, owner, relay):
    signed_in.post(COMPOSE, form(to="bob@remote.test", subject="Gone", body="x", undo="5"))
    message = OutboundMessage.objects.get()
    with time_machine.travel(timezone.now() + timedelta(seconds=6)):
        outbound_dispatch_due()

    response = signed_in.post(f"/webmail/compose/sent/{message.pk}/undo/", follow=True)

    assert "Too late to undo: the message is already on its way." in response.content.decode()
    assert len(relay.messages) == 1 and drafts(owner) == []


def test_send_later_holds_the_message_until_it_is_due(signed_in, owner, relay):
    berlin = ZoneInfo("Europe/Berlin")
    local = (timezone.now() + timedelta(days=2)).astimezone(berlin).replace(hour=9, minute=30, second=0, microsecond=0)

    response = signed_in.post(COMPOSE, form(action="schedule", to="bob@remote.test", subject="Morning", body="Hello",
                                            send_at=local.strftime("%Y-%m-%dT%H:%M"), tz="Europe/Berlin"))

    message = OutboundMessage.objects.get()
    assert message.status == "scheduled" and message.scheduled_at == local and message.unsend_window is None
    page = signed_in.get(response.url).content.decode()
    assert "Scheduled" in page and "Cancel and edit" in page
    assert outbound_dispatch_due() == 0 and relay.messages == []
    with time_machine.travel(local + timedelta(seconds=1)):
        assert outbound_dispatch_due() == 1
    assert parse(relay.messages[0].content)["Subject"] == "Morning"


def test_cancelling_a_send_later_brings_the_draft_back(signed_in, owner, relay):
    when = (timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    signed_in.post(COMPOSE, form(action="schedule", to="bob@remote.test", subject="Later", body="Hi", send_at=when))
    message = OutboundMessage.objects.get()

    response = signed_in.post(f"/webmail/compose/sent/{message.pk}/undo/")

    [draft] = drafts(owner)
    assert response.url == f"/webmail/compose/drafts/{draft.uid}/" and draft.subject == "Later"
    message.refresh_from_db()
    assert message.status == "cancelled"
    with time_machine.travel(timezone.now() + timedelta(hours=4)):
        assert outbound_dispatch_due() == 0


def test_send_later_needs_a_future_time(signed_in, owner):
    response = signed_in.post(COMPOSE, form(action="schedule", to="bob@remote.test", subject="x", body="y"))
    assert response.status_code == 422 and "Pick the date and time to send it at." in response.content.decode()

    response = signed_in.post(COMPOSE, form(action="schedule", to="bob@remote.test", subject="x", body="y",
                                            send_at="2020-01-01T10:00"))
    assert response.status_code == 422 and "Scheduled_at must be in the future" in response.content.decode()
    assert OutboundMessage.objects.count() == 0


# Suggestions -----------------------------------------------------------------------------------

def test_address_suggestions_come_from_recent_correspondents(signed_in, owner):
    original(owner, sender="Amy Pond <amy@remote.test>")
    draft_send(mailbox=owner, composition=Composition(to="rory@remote.test", body_text="x"), attachments=[])

    first = signed_in.get("/webmail/compose/suggest/", {"q": "am"}).content.decode()
    later = signed_in.get("/webmail/compose/suggest/", {"q": "rory@remote.test, amy"}).content.decode()
    page = signed_in.get(COMPOSE).content.decode()

    assert first == '<option value="Amy Pond &lt;amy@remote.test&gt;, "></option>'
    assert later == '<option value="rory@remote.test, Amy Pond &lt;amy@remote.test&gt;, "></option>'
    assert ('<option value="rory@remote.test"></option>'
            '<option value="Amy Pond &lt;amy@remote.test&gt;"></option>') in page
    assert owner.address not in signed_in.get("/webmail/compose/suggest/", {"q": "ann"}).content.decode()
