"""The hostile corpus (testkit.hostile_mail) over LMTP through the real listener, into the embedded
store and into Dovecot, then read through the REST inbox (list, message, attachments), the MCP tools
(list and search: no MCP tool reads a body) and the webmail (list, message page and its frame
document, attachments, conversation): each message is taken and kept as it came (the one over the
size limit refused with 552), the listener keeps serving, every read answers 200, header values come
back as one line without NUL, and nothing returned as HTML carries script, an event handler, a script
or active data: URL, or a request to the remote host before the reader allows images."""
import html
import json
import re
import smtplib
from html.parser import HTMLParser

import pytest
from django.test import Client
from rest_framework.test import APIClient

from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.inbound.server import MAX_MESSAGE_BYTES
from mailcore.mailboxes.services import mailbox_create
from mailcore.store.factory import store_for
from mailcore.tests.inbox.test_webmail_display import dangers
from testkit.clients import login_client, new_key
from testkit.dovecot import use_store
from testkit.hostile_mail import DELIVERED, HOSTILE_MAIL, OVERSIZE
from testkit.mail import lmtp_send
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
# RFC 1870's 552 as aiosmtpd words it, without RFC 3463's enhanced code (5.3.4, message too big for
# system): the listener does not announce ENHANCEDSTATUSCODES, so a relay reads the code alone.
SIZE_REFUSED = (552, b"Error: message size exceeds fixed maximum message size")  # at MAIL FROM, SIZE declared
DATA_REFUSED = (552, b"Error: Too much mail data")  # after DATA, when the client declared no size
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href"}
FETCHING_ATTRIBUTES = {"src", "srcset", "background", "poster", "style", "data"}


class PageMarkup(HTMLParser):
    """What a page of ours (outside the sandboxed frame, whose document is checked on its own) would
    run or fetch because of a message: anything of the message must have arrived there escaped."""

    def __init__(self):
        super().__init__()
        self.dangers: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script" and not attributes.get("src"):
            self.dangers.append("an inline script")
        for name, value in attributes.items():
            value = value or ""
            if name.startswith("on"):
                self.dangers.append(f"an event handler: <{tag} {name}>")
            if name in URL_ATTRIBUTES and re.match(r"\s*(javascript|vbscript|data):", value, re.I):
                self.dangers.append(f"a script URL: <{tag} {name}>")
            if name in FETCHING_ATTRIBUTES and "evil.example" in value:
                self.dangers.append(f"a request to the remote host: <{tag} {name}>")

    handle_startendtag = handle_starttag


@pytest.fixture(params=["embedded", "imap"])
def mailbox(request, plans, alice, settings, tmp_path):
    """alice's mailbox on the store named by the parameter: the embedded store, or the real Dovecot
    (its mail outlives the test database, so the mailbox has a domain of its own there)."""
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    domain = domain_mark_verified(domain=domain_create(account=alice.account, name=use_store(request, settings)))
    return mailbox_create(domain=domain, local_part="ann", password=PASSWORD)


@pytest.fixture
def listener():
    with inbound_listener() as port:
        yield port


def deliver(port: int, raw: bytes, address: str) -> tuple[int, bytes]:
    """The listener's reply to one LMTP transaction."""
    try:
        refused = lmtp_send(port, raw, [address], "eve@evil.example")
    except smtplib.SMTPSenderRefused as exc:
        return exc.smtp_code, exc.smtp_error
    except smtplib.SMTPRecipientsRefused as exc:
        return exc.recipients[address]
    except smtplib.SMTPDataError as exc:
        return exc.smtp_code, exc.smtp_error
    return refused.get(address, (250, b"2.0.0 Delivered"))


def deliver_without_size(port: int, raw: bytes, address: str) -> tuple[int, bytes]:
    """A client that does not declare SIZE: the listener can only refuse after the data."""
    with smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo()
        assert client.mail("eve@evil.example") == (250, b"OK")
        assert client.rcpt(address)[0] == 250
        return client.data(raw)


def delivered_uids(mailbox) -> dict[str, int]:
    """Each delivered message's UID by its name: the store gives UIDs in the order of arrival."""
    messages = store_for(mailbox).list("INBOX", per_page=100, reverse=False).messages
    assert len(messages) == len(DELIVERED)
    return {hostile.name: summary.uid for hostile, summary in zip(DELIVERED, messages, strict=True)}


def deliver_corpus(port: int, mailbox) -> dict[str, bytes]:
    """Every message of the corpus that is not oversize, each taken with 250: its bytes by name."""
    sent = {hostile.name: hostile.raw for hostile in DELIVERED}
    replies = {name: deliver(port, raw, mailbox.address) for name, raw in sent.items()}
    assert {name: reply for name, reply in replies.items() if reply != (250, b"2.0.0 Delivered")} == {}
    return sent


def frame_body(page: str) -> str:
    found = re.search(r'<iframe[^>]*\ssrcdoc="([^"]*)"', page)
    assert found, "the HTML body is only in the sandboxed frame"
    return html.unescape(found.group(1))


def some(items: list) -> list:
    """The first three and the last: each download reads the whole message again, and one has 500."""
    return items if len(items) <= 4 else [*items[:3], items[-1]]


def page_dangers(page: str) -> list[str]:
    markup = PageMarkup()
    markup.feed(page)
    markup.close()
    return markup.dangers


def broken_lines(*values: str) -> list[str]:
    """Header values as an API returns them must be one line without NUL: a client pasting them into
    a header of its own (a reply's Subject) would otherwise inject one."""
    return [value for value in values if re.search(r"[\r\n\x00]", value)]


def mcp(api: APIClient, key: str, tool: str, arguments: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = api.generic("POST", "/mcp", json.dumps(body), content_type="application/json",
                           HTTP_X_API_KEY=key, HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
    assert response.status_code == 200, response.content[:500]
    result = response.json()["result"]
    assert result.get("isError") is not True, result
    return result["structuredContent"]


def test_the_corpus_has_at_least_fifty_messages_in_every_category():
    categories = {hostile.category for hostile in HOSTILE_MAIL}
    assert len(HOSTILE_MAIL) >= 50
    assert len(categories) == 11
    assert len({hostile.name for hostile in HOSTILE_MAIL}) == len(HOSTILE_MAIL)
    assert [hostile.category for hostile in HOSTILE_MAIL if hostile.oversize] == [OVERSIZE]


def test_mail_over_the_size_limit_is_refused_with_552_and_not_stored(mailbox, listener):
    [oversize] = [hostile for hostile in HOSTILE_MAIL if hostile.oversize]
    raw = oversize.raw
    assert len(raw) > MAX_MESSAGE_BYTES

    assert deliver(listener, raw, mailbox.address) == SIZE_REFUSED
    assert deliver_without_size(listener, raw, mailbox.address) == DATA_REFUSED

    assert store_for(mailbox).list("INBOX").total == 0
    assert Event.objects.count() == 0
    assert deliver(listener, DELIVERED[0].raw, mailbox.address) == (250, b"2.0.0 Delivered")


def test_every_hostile_message_is_taken_kept_as_it_came_and_read_safely_through_rest_mcp_and_webmail(
    mailbox, listener, alice, settings
):
    sent = deliver_corpus(listener, mailbox)
    uids = delivered_uids(mailbox)
    address = mailbox.address

    store = store_for(mailbox)
    for name, raw in sent.items():
        kept = raw if settings.MAIL_STORE == "embedded" else raw.replace(b"\x00", b"\x80")  # as Dovecot keeps NUL
        assert store.fetch("INBOX", uids[name]).raw.endswith(kept), name
    announced = [event.data["message_id"] for event in Event.objects.filter(name="email.received")]
    assert len(announced) == len(DELIVERED)
    # each one announced under its own Message-ID: inbound read them all (the giant one's is not its slug)
    assert {hostile.message_id for hostile in DELIVERED} - set(announced) == {
        "<giant-message-id-and-references@evil.example>"}
    with smtplib.LMTP("127.0.0.1", listener) as client:
        assert client.noop()[0] == 250  # still serving
    api = login_client(alice)

    listing = api.get("/inbox", {"email": address, "per_page": 100})
    assert listing.status_code == 200
    listed = listing.json()["messages"]
    assert sorted(item["uid"] for item in listed) == sorted(uids.values())
    assert broken_lines(*(item["subject"] for item in listed), *(item["from"] for item in listed)) == []

    key = new_key(alice, scopes=["mailboxes:read"])
    agent = APIClient()
    recent = mcp(agent, key, "list_recent_messages", {"email": address, "per_page": 100})
    assert sorted(item["uid"] for item in recent["messages"]) == sorted(uids.values())
    assert broken_lines(*(item["untrusted"]["subject"] for item in recent["messages"])) == []
    found = mcp(agent, key, "search_emails", {"email": address, "q": "hostile"})
    assert (found["count"], found["truncated"]) == (50, True)
    assert broken_lines(*(item["untrusted"]["subject"] for item in found["messages"])) == []
    for words in ("alert script", "evil.example", "\u2603", "\ufffd"):
        mcp(agent, key, "search_emails", {"email": address, "q": words})  # answers, as a result

    webmail = Client()
    assert webmail.post("/webmail/", {"address": address, "password": PASSWORD}).status_code == 302
    inbox = webmail.get("/webmail/inbox/")
    assert inbox.status_code == 200
    assert page_dangers(inbox.content.decode()) == []

    problems = []
    for hostile in DELIVERED:
        uid, name = uids[hostile.name], hostile.name
        message = api.get(f"/inbox/{uid}", {"email": address})
        if message.status_code != 200:
            problems.append((name, "REST", message.status_code))
            continue
        body = message.json()
        problems += [(name, "REST body_html", danger) for danger in dangers(body["body_html"])]
        problems += [(name, "REST header", value) for value in broken_lines(
            body["subject"], body["from"], body["message_id"], *body["to"], *body["cc"], *body["reply_to"],
            *(found["value"] for found in body["headers"]))]
        if body["remote_images_blocked"]:
            allowed = api.get(f"/inbox/{uid}", {"email": address, "allow_remote_images": "true"})
            problems += [(name, "REST with images", danger) for danger in dangers(allowed.json()["body_html"])
                         if danger != "a request to the remote host"]
        for attachment in some(body["attachments"]):
            download = api.get(f"/inbox/{uid}/attachments/{attachment['index']}", {"email": address})
            if download.status_code != 200 or download["Content-Type"] != "application/octet-stream":
                problems.append((name, "REST attachment", download.status_code, download["Content-Type"]))

        page = webmail.get(f"/webmail/folders/INBOX/messages/{uid}/")
        if page.status_code != 200:
            problems.append((name, "webmail", page.status_code))
            continue
        text = page.content.decode()
        problems += [(name, "webmail page", danger) for danger in page_dangers(text)]
        if ('srcdoc="' in text) != hostile.html:
            problems.append((name, "webmail frame", "shown" if 'srcdoc="' in text else "missing"))
        if 'srcdoc="' in text:
            frame = frame_body(text)
            problems += [(name, "webmail frame", danger) for danger in dangers(frame.split("<body>", 1)[1])]
            page_images = page["Content-Security-Policy"].split("img-src", 1)[1].split(";")[0]
            if "img-src data:;" not in frame or "https:" in page_images:
                problems.append((name, "webmail images allowed before consent"))
        for index in some(re.findall(rf'/webmail/folders/INBOX/messages/{uid}/attachments/(\d+)/', text)):
            download = webmail.get(f"/webmail/folders/INBOX/messages/{uid}/attachments/{index}/")
            if download.status_code != 200 or "sandbox" not in download["Content-Security-Policy"] \
                    or download["Content-Type"] in {"text/html", "image/svg+xml"}:
                problems.append((name, "webmail attachment", download.status_code, download["Content-Type"]))
        conversation = webmail.get(f"/webmail/conversations/INBOX/{uid}/")
        if conversation.status_code != 200:
            problems.append((name, "webmail conversation", conversation.status_code))
        else:
            problems += [(name, "webmail conversation", danger)
                         for danger in page_dangers(conversation.content.decode())]
    assert problems == []
