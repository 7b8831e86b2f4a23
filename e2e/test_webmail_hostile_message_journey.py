"""A mailbox owner opens, one after another, every message of the hostile corpus (testkit.hostile_mail)
that has an HTML body, each delivered over LMTP through the real listener: no dialog ever opens, no
error reaches the console, and no request leaves for a remote host; then allows pictures once for an
ordinary message and sees the remote image load (served by the browser's request routing, so nothing
leaves the machine)."""
import re

import pytest
from playwright.sync_api import expect

from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox
from testkit.hostile_mail import DELIVERED, PNG
from testkit.mail import lmtp_send
from testkit.smtp_sink import free_port, inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
# Every request for a host other than this machine goes to a proxy that is not there, so none can
# leave; each one is recorded (request events see the sandboxed frame's requests too, e2e/conftest.py).
# A route would do the same but turn the browser's cache off, and each page would fetch its styles again.
NOWHERE = {"server": f"http://127.0.0.1:{free_port()}", "bypass": "localhost,127.0.0.1"}
# The messages without an HTML body (giant headers, some malformed MIME) are read in the page tests
# (mailcore/tests/inbound/test_hostile_mail.py); each of these is shown in the webmail's sandboxed frame.
HTML_BEARING = [hostile for hostile in DELIVERED if hostile.html]
LOCAL = re.compile(r"^((https?|wss?)://(localhost|127\.0\.0\.1)(:\d+)?/|data:|blob:|about:)")


@pytest.mark.browser_context_args(proxy=NOWHERE)
def test_hostile_messages_stay_inert_and_remote_images_wait_for_consent(plans, settings, page, live_server,
                                                                        screenshot):
    settings.MAIL_STORE, settings.SMTP_URL = "embedded", ""
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    with inbound_listener() as port:
        for hostile in HTML_BEARING:
            assert lmtp_send(port, hostile.raw, [mailbox.address], "eve@evil.example") == {}, hostile.name
    arrived = store.list("INBOX", per_page=100, reverse=False).messages  # UIDs in the order of arrival
    uids = {hostile.name: summary.uid for hostile, summary in zip(HTML_BEARING, arrived, strict=True)}

    dialogs, remote, errors = [], [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.context.on("request", lambda request: None if LOCAL.match(request.url) else remote.append(request.url))
    page.context.on("page", lambda popup: remote.append(f"popup {popup.url}"))

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    for hostile in HTML_BEARING:
        page.goto(f"{live_server.url}/webmail/folders/INBOX/messages/{uids[hostile.name]}/")
        # laid out: whatever its styles would fetch is asked for by now
        expect(page.locator("iframe.message__frame"), hostile.name).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert dialogs == [], dialogs
    assert remote == [], remote
    assert errors == [], errors

    page.context.route(re.compile(r"^https://evil\.example/"),
                       lambda route: route.fulfill(status=200, content_type="image/png", body=PNG))
    page.goto(f"{live_server.url}/webmail/folders/INBOX/messages/{uids['xss: remote image']}/")
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
