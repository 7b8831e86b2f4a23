"""The mail list's rows are prepared by the view from one read of the mailbox's labels: the page
reads the labels table once, and each row still shows its sender's name, its labels, its star,
its paperclip and its date as before."""
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mailcore.inbox.labels import label_create
from mailcore.store.factory import store_for
from portal.tests.conftest import WEBMAIL_PASSWORD as PASSWORD
from testkit.factories import make_message


@pytest.fixture
def signed_in(client, webmail_owner):
    assert client.post("/webmail/", {"address": webmail_owner.address, "password": PASSWORD}).status_code == 302
    return client


def test_the_list_reads_the_labels_once_and_rows_show_what_they_did(signed_in, webmail_owner):
    owner = webmail_owner
    label = label_create(account=owner.account, name="Clients", color="#1a73e8")
    store = store_for(owner)
    store.deliver(make_message("With a file", sender="Amy Example <amy@example.test>", to=owner.address,
                               attachments=[("a.pdf", "application/pdf", b"%PDF-1")]),
                  recipient=owner.address, envelope_from="x@elsewhere.test")
    uid = store.list("INBOX").messages[0].uid
    store.set_flags("INBOX", uid, starred=True, add_keywords=(label.keyword,))

    with CaptureQueriesContext(connection) as captured:
        page = signed_in.get("/webmail/inbox/").content.decode()

    assert len([query for query in captured.captured_queries if "mailcore_label" in query["sql"]]) == 1
    row = re.search(r"<tr class=\"mail-row[^\"]*\" data-message-row.*?</tr>", page, re.S).group(0)
    assert 'class="mail-row mail-row--unread mail-row--starred"' in row
    assert '<span title="Amy Example &lt;amy@example.test&gt;">Amy Example</span>' in row
    assert f'href="/webmail/folders/INBOX/messages/{uid}/" data-open>With a file</a>' in row
    assert 'title="Has attachments"' in row and "<svg" in row
    assert '<span class="mail-label" style="--label-color: #1a73e8">Clients</span>' in row
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT[\d:]+\+00:00">\d{1,2} \w{3} \d{4}, \d\d:\d\d</time>', row)
