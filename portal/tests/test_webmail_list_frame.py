"""The folder page reads its sidebar (folders with unread counts) beside the list itself: the
sidebar and the rows are both there, an unknown folder is still a 404 (before any search input is
judged), a mail server that cannot be reached still gives the page with its reason, and what
messages and labels say is escaped wherever a row shows it. Every test runs on the embedded store
and on the real Dovecot."""
import re
import socket

import pytest

from mailcore.inbox.labels import label_create
from mailcore.store.factory import store_for
from portal.tests.conftest import WEBMAIL_PASSWORD as PASSWORD
from testkit.factories import make_message


@pytest.fixture
def signed_in(client, webmail_owner):
    assert client.post("/webmail/", {"address": webmail_owner.address, "password": PASSWORD}).status_code == 302
    return client


def deliver(mailbox, subject, **kwargs):
    store_for(mailbox).deliver(make_message(subject, to=mailbox.address, **kwargs), recipient=mailbox.address,
                               envelope_from="x@elsewhere.test")


def test_the_page_shows_the_folders_unread_counts_and_the_rows(signed_in, webmail_owner):
    deliver(webmail_owner, "First")
    deliver(webmail_owner, "Second")

    response = signed_in.get("/webmail/inbox/")

    page = response.content.decode()
    assert response.status_code == 200
    assert re.search(r'href="/webmail/folders/INBOX/" aria-current="page">\s*<span class="nav__text">Inbox</span> '
                     r'<span class="badge" aria-label="2 unread">2</span>', page)
    assert '<span class="nav__text">Sent</span>' in page
    assert re.findall(r"data-open>([^<]+)</a>", page) == ["Second", "First"]


def test_an_unknown_folder_is_not_found_even_with_a_search_that_cannot_be_read(signed_in):
    assert signed_in.get("/webmail/folders/Nowhere/").status_code == 404
    assert signed_in.get("/webmail/folders/Nowhere/", {"since": "not a date"}).status_code == 404
    assert signed_in.get("/webmail/folders/Nowhere/", HTTP_HX_REQUEST="true").status_code == 404
    assert signed_in.get("/webmail/inbox/", {"since": "not a date"}).status_code == 400


def test_what_a_message_and_a_label_say_is_escaped_in_its_row(signed_in, webmail_owner):
    label = label_create(account=webmail_owner.account, name="<i>Ours</i> & co", color="#1a73e8")
    deliver(webmail_owner, '<script>alert("s")</script> & more', sender='"Eve <b>" <eve@example.test>')
    store = store_for(webmail_owner)
    uid = store.list("INBOX").messages[0].uid
    store.set_flags("INBOX", uid, add_keywords=(label.keyword,))

    page = signed_in.get("/webmail/inbox/").content.decode()

    row = re.search(r'<tr class="mail-row[^"]*" data-message-row.*?</tr>', page, re.S).group(0)
    subject = "&lt;script&gt;alert(&quot;s&quot;)&lt;/script&gt; &amp; more"
    assert f'aria-label="Select message {subject}"' in row
    assert f"data-open>{subject}</a>" in row
    sender = "Eve &lt;b&gt; &lt;eve@example.test&gt;"  # a name with brackets is shown whole
    assert f'<span title="{sender}">{sender}</span>' in row
    assert '<span class="mail-label" style="--label-color: #1a73e8">&lt;i&gt;Ours&lt;/i&gt; &amp; co</span>' in row
    assert "<script>" not in page and "<i>Ours" not in page


@pytest.mark.parametrize("webmail_owner", [pytest.param("imap", marks=pytest.mark.django_db(transaction=True))],
                         indirect=True)  # only a mail server can be lost; the embedded store has none
def test_a_mail_server_that_cannot_be_reached_leaves_the_page_with_its_reason(signed_in, webmail_owner, settings):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        settings.IMAP_PORT = unused.getsockname()[1]  # nothing listens there once closed

    response = signed_in.get("/webmail/inbox/")

    page = response.content.decode()
    assert response.status_code == 503
    assert ("The search could not be done: The mail server could not be reached: cannot reach the mail server "
            f"127.0.0.1:{settings.IMAP_PORT}") in page
    assert 'class="nav__text"' not in page  # no folders to show
    assert "data-message-row" not in page
