"""Reading a message in the webmail as its owner sees it: each known XSS vector arrives inert inside
the sandboxed frame, the page's policy keeps remote images out until the reader allows them (once,
or always for the sender, which can be taken back), cid: images are shown, attachments download
with headers that stop the browser from running them, and the actions on a message work without
JavaScript. Runs on the embedded store and on the real Dovecot."""
import html
import re

import pytest

from mailcore.store.factory import store_for
from mailcore.tests.inbox.test_webmail_display import dangers
from mailcore.tests.xss_corpus import XSS_CORPUS
from webmail.models import RemoteImageSender
from portal.tests.conftest import WEBMAIL_PASSWORD as PASSWORD
from testkit.factories import make_mailbox, make_message

PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


@pytest.fixture
def owner(webmail_owner):
    return webmail_owner


@pytest.fixture
def signed_in(client, owner):
    assert client.post("/webmail/", {"address": owner.address, "password": PASSWORD}).status_code == 302
    return client


def deliver(mailbox, raw: bytes) -> int:
    store = store_for(mailbox)
    store.deliver(raw, recipient=mailbox.address, envelope_from="x@elsewhere.test")
    return store.list("INBOX").messages[0].uid


def frame_body(page: str) -> str:
    found = re.search(r'<iframe[^>]*\ssandbox="allow-popups allow-popups-to-escape-sandbox"[^>]*\ssrcdoc="([^"]*)"', page)
    assert found, "the HTML body is only in the sandboxed frame"
    return html.unescape(found.group(1)).split("<body>", 1)[1]


def test_every_known_vector_arrives_inert_in_the_frame(signed_in, owner):
    for name, vector in XSS_CORPUS:
        uid = deliver(owner, make_message(name, html=f"<p>{name}</p>{vector}", to=owner.address))
        response = signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/")
        page = response.content.decode()
        assert response.status_code == 200, name
        assert dangers(frame_body(page)) == [], name
        assert "https:" not in response["Content-Security-Policy"].split("img-src", 1)[1].split(";")[0], name
        assert "allow-scripts" not in page and "allow-same-origin" not in page, name


def test_remote_images_wait_for_consent_once_or_always_and_can_be_asked_again(signed_in, owner):
    raw = make_message("Photos", sender="Amy <amy@friends.test>", to=owner.address,
                       html='<p>Look</p><img src="https://cdn.example/photo.jpg" width="300">'
                            '<img src="https://cdn.example/open.gif" width="1" height="1">')
    uid = deliver(owner, raw)
    url = f"/webmail/folders/INBOX/messages/{uid}/"

    held = signed_in.get(url)
    assert "cdn.example" not in frame_body(held.content.decode())
    assert "Show pictures this time" in held.content.decode()
    assert "1 tracking image removed" in held.content.decode()

    once = signed_in.get(f"{url}?images=once")
    assert 'src="https://cdn.example/photo.jpg"' in frame_body(once.content.decode())
    assert "open.gif" not in once.content.decode()  # the tracker stays out after consent
    assert "https:" in once["Content-Security-Policy"].split("img-src", 1)[1].split(";")[0]
    assert "cdn.example" not in frame_body(signed_in.get(url).content.decode())  # once is once

    signed_in.post(f"{url}images/", {"choice": "always"})
    assert RemoteImageSender.objects.filter(mailbox=owner, sender="amy@friends.test").exists()
    always = signed_in.get(url).content.decode()
    assert "cdn.example/photo.jpg" in frame_body(always) and "Ask me again for this sender" in always

    signed_in.post(f"{url}images/", {"choice": "revoke"})
    assert "cdn.example" not in frame_body(signed_in.get(url).content.decode())
    assert signed_in.post(f"{url}images/", {"choice": "everything"}).status_code == 302
    assert not RemoteImageSender.objects.exists()


def test_inline_cid_images_are_shown_inside_the_frame(signed_in, owner):
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "amy@friends.test", owner.address, "Logo"
    message.set_content("text")
    message.add_alternative('<p>Our logo:</p><img src="cid:logo@friends.test">', subtype="html")
    message.get_payload()[1].add_related(PNG, maintype="image", subtype="png", cid="<logo@friends.test>")
    uid = deliver(owner, message.as_bytes())

    body = frame_body(signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode())
    assert 'src="data:image/png;base64,' in body and "cid:" not in body


def test_attachments_download_with_headers_that_stop_the_browser_running_them(signed_in, owner):
    uid = deliver(owner, make_message("Files", to=owner.address, attachments=[
        ("report.pdf", "application/pdf", b"%PDF-1.4 report"),
        ("page.html", "text/html", b"<script>alert(1)</script>"),
        ('../"evil\u202ename.txt', "text/plain", b"x"),
    ]))
    page = signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode()
    links = re.findall(r'href="(/webmail/folders/INBOX/messages/\d+/attachments/\d+/)"', page)
    assert len(links) == 3

    pdf, page_html, odd = (signed_in.get(link) for link in links)
    for response in (pdf, page_html, odd):
        assert response["Content-Security-Policy"].startswith("default-src 'none'")
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Content-Disposition"].startswith("attachment;")
    assert pdf["Content-Type"] == "application/pdf" and pdf.content == b"%PDF-1.4 report"
    assert page_html["Content-Type"] == "application/octet-stream"  # never rendered as HTML
    assert "/" not in odd["Content-Disposition"].split("filename=", 1)[1].split(";")[0]
    assert "\u202e" not in odd["Content-Disposition"]
    assert signed_in.get(links[0].replace("/attachments/", "/attachments/9").rstrip("/") + "9/").status_code == 404


def test_plain_text_mail_gets_clickable_links_and_stays_escaped(signed_in, owner):
    uid = deliver(owner, make_message("Plain", to=owner.address,
                                      body="Read https://example.org/a?b=1 <script>alert(1)</script>"))
    page = signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode()
    assert '<a href="https://example.org/a?b=1" target="_blank" rel="noopener noreferrer nofollow">' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_opening_marks_seen_and_the_actions_work_without_javascript(signed_in, owner):
    uid = deliver(owner, make_message("Act on me", to=owner.address))
    store = store_for(owner)
    url = f"/webmail/folders/INBOX/messages/{uid}/"
    page = signed_in.get(url).content.decode()
    assert store.list("INBOX").messages[0].seen
    assert f"/webmail/compose/reply/INBOX/{uid}/" in page and f"/webmail/conversations/INBOX/{uid}/" in page

    signed_in.post(f"{url}actions/", {"action": "unread"})
    assert not store.list("INBOX").messages[0].seen
    signed_in.post(f"{url}actions/", {"action": "star"})
    assert store.list("INBOX").messages[0].starred
    assert signed_in.post(f"{url}actions/", {"action": "archive"})["Location"] == "/webmail/folders/INBOX/"
    archived = store.list("Archive").messages[0].uid
    signed_in.post(f"/webmail/folders/Archive/messages/{archived}/actions/", {"action": "delete"})
    trashed = store.list("Trash").messages[0].uid
    confirm = signed_in.post(f"/webmail/folders/Trash/messages/{trashed}/actions/", {"action": "delete"})
    assert confirm.status_code == 200 and store.list("Trash").total == 1
    signed_in.post(f"/webmail/folders/Trash/messages/{trashed}/actions/", {"action": "delete", "confirm": "yes"})
    assert store.list("Trash").total == 0


def test_another_mailbox_and_missing_messages_are_not_found(client, owner, alice):
    other = make_mailbox(alice.account, f"bob@{owner.domain.name}", password=PASSWORD)
    uid = deliver(owner, make_message("Private", to=owner.address,
                                      attachments=[("a.txt", "text/plain", b"secret")]))
    client.post("/webmail/", {"address": other.address, "password": PASSWORD})
    store_for(other).ensure_folders()
    for path in (f"/webmail/folders/INBOX/messages/{uid}/", f"/webmail/folders/INBOX/messages/{uid}/attachments/1/",
                 f"/webmail/folders/INBOX/messages/{uid}/original/", "/webmail/folders/Nowhere/messages/1/"):
        assert client.get(path).status_code == 404, path
    assert client.post(f"/webmail/folders/INBOX/messages/{uid}/actions/", {"action": "read"}).status_code == 404


def test_move_to_starts_on_a_neutral_choice_and_moving_without_a_folder_changes_nothing(signed_in, owner):
    uid = deliver(owner, make_message("Quarterly report", to=owner.address))
    page = signed_in.get(f"/webmail/folders/INBOX/messages/{uid}/").content.decode()
    select = re.search(r'<select id="move-target" name="target"[^>]*>(.*?)</select>', page, re.S).group(1)
    options = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', select)
    assert options[0] == ("", " selected", "Move to…")
    assert [selected for _, selected, _ in options[1:]] == [""] * (len(options) - 1)

    response = signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/actions/", {"action": "move", "target": ""},
                              follow=True)
    assert "Nothing was changed: Choose the folder to move the message to." in html.unescape(response.content.decode())
    assert [found.uid for found in store_for(owner).list("INBOX").messages] == [uid]
