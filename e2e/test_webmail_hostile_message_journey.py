"""A mailbox owner opens every message of the XSS corpus in the webmail: no dialog ever opens and no
request leaves for a remote host; then allows pictures once for an ordinary message and sees the
remote image load (served here by the browser's request routing, so nothing leaves the machine)."""
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from mailcore.store.factory import store_for
from mailcore.tests.xss_corpus import XSS_CORPUS
from testkit.factories import UserFactory, make_mailbox, make_message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
       b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


def test_hostile_messages_stay_inert_and_remote_images_wait_for_consent(plans, page, live_server, screenshot):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    for name, vector in XSS_CORPUS:
        store.deliver(make_message(f"Vector: {name}", html=f"<p>{name}</p>{vector}", to=mailbox.address),
                      recipient=mailbox.address, envelope_from="evil@evil.example")
    uids = {m.subject: m.uid for m in store.list("INBOX", per_page=100).messages}

    dialogs, remote = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.context.on("page", lambda popup: remote.append(f"popup {popup.url}"))

    def route(request_route):
        host = urlsplit(request_route.request.url).hostname
        if host in {"localhost", "127.0.0.1"}:
            request_route.continue_()
        else:
            remote.append(request_route.request.url)
            request_route.fulfill(status=200, content_type="image/png", body=PNG)

    page.context.route("**/*", route)

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    for name, _ in XSS_CORPUS:
        page.goto(f"{live_server.url}/webmail/folders/INBOX/messages/{uids[f'Vector: {name}']}/")
        expect(page.get_by_role("heading", level=1)).to_contain_text(name)
        frame = page.frame_locator("iframe.message__frame")
        expect(frame.locator("p").first).to_have_text(name)
        page.wait_for_load_state("networkidle")
    assert dialogs == [], dialogs
    assert remote == [], remote

    page.goto(f"{live_server.url}/webmail/folders/INBOX/messages/{uids['Vector: remote image']}/")
    screenshot("webmail-message-images-held")
    page.get_by_role("link", name="Show pictures this time").click()
    picture = page.frame_locator("iframe.message__frame").locator("img[alt=photo]")
    picture.scroll_into_view_if_needed()
    expect(picture).to_have_js_property("naturalWidth", 1)  # the routed 1x1 PNG arrived
    expect(page.frame_locator("iframe.message__frame").locator("img[alt=photo]")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert remote == ["https://evil.example/photo.jpg"], remote  # the picture, never the trackers
    assert dialogs == []
    screenshot("webmail-message-images-shown")
