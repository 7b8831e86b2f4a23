"""The webmail's mail list as its owner uses it: sorting and paging, search done by the store's
server, bulk actions on a selection or on everything matching, folders and labels, conversations;
without JavaScript (plain forms and redirects) and with htmx (the list region comes back). Every test
runs twice: on the embedded store and on the real Dovecot (through the master user, as in production)."""
import re

import pytest

from mailcore.inbox.labels import label_create
from mailcore.mailboxes.models import Label
from mailcore.store.factory import store_for
from portal.tests.conftest import WEBMAIL_PASSWORD as PASSWORD
from testkit.factories import make_mailbox, make_message



@pytest.fixture
def owner(webmail_owner):
    return webmail_owner


@pytest.fixture
def signed_in(client, owner):
    response = client.post("/webmail/", {"address": owner.address, "password": PASSWORD})
    assert response.status_code == 302
    return client


def deliver(mailbox, subject, **kwargs):
    store_for(mailbox).deliver(make_message(subject, to=mailbox.address, **kwargs), recipient=mailbox.address,
                               envelope_from="x@elsewhere.test")


def subjects(page: str) -> list[str]:
    return re.findall(r'data-open>([^<]+)</a>', page)


def test_the_list_sorts_on_the_server_and_pages(signed_in, owner):
    for subject in ("banana", "apple", "cherry"):
        deliver(owner, subject)

    assert subjects(signed_in.get("/webmail/inbox/").content.decode()) == ["cherry", "apple", "banana"]
    page = signed_in.get("/webmail/inbox/?sort=subject&order=asc").content.decode()
    assert subjects(page) == ["apple", "banana", "cherry"]


def test_paging_keeps_the_search_and_sort(signed_in, owner, monkeypatch):
    monkeypatch.setattr("portal.webmail.mail_list.PER_PAGE", 2)
    for index in range(5):
        deliver(owner, f"report {index}")
    deliver(owner, "other")

    first = signed_in.get("/webmail/inbox/?q=report&sort=subject&order=asc").content.decode()
    assert subjects(first) == ["report 0", "report 1"]
    assert 'href="?q=report&amp;sort=subject&amp;order=asc&amp;page=2"' in first
    second = signed_in.get("/webmail/inbox/?q=report&sort=subject&order=asc&page=2").content.decode()
    assert subjects(second) == ["report 2", "report 3"]


def test_search_by_sender_subject_attachment_and_unread(signed_in, owner):
    deliver(owner, "Invoice March", sender="Billing <billing@vendor.test>",
            attachments=[("march.pdf", "application/pdf", b"%PDF-1.4")])
    deliver(owner, "Lunch", sender="Amy <amy@friends.test>")
    uid = store_for(owner).list("INBOX").messages[0].uid
    store_for(owner).set_flags("INBOX", uid, seen=True)  # Lunch is read

    assert subjects(signed_in.get("/webmail/inbox/?from=vendor.test").content.decode()) == ["Invoice March"]
    assert subjects(signed_in.get("/webmail/inbox/?subject=lunch").content.decode()) == ["Lunch"]
    assert subjects(signed_in.get("/webmail/inbox/?attachment=1").content.decode()) == ["Invoice March"]
    assert subjects(signed_in.get("/webmail/inbox/?unread=1").content.decode()) == ["Invoice March"]
    nothing = signed_in.get("/webmail/inbox/?q=zebra").content.decode()
    assert "No messages match" in nothing


def test_bad_search_input_is_explained_and_lists_nothing(signed_in, owner):
    deliver(owner, "kept")
    response = signed_in.get("/webmail/inbox/?since=2026-05-01&before=2026-04-01")
    assert response.status_code == 400
    assert "The end date is before the start date" in response.content.decode()
    assert signed_in.get("/webmail/inbox/?sort=colour").status_code == 400
    assert signed_in.get("/webmail/inbox/?page=0").status_code == 400


def test_bulk_actions_without_javascript(signed_in, owner):
    for subject in ("one", "two", "three"):
        deliver(owner, subject)
    store = store_for(owner)
    uids = {m.subject: m.uid for m in store.list("INBOX").messages}

    response = signed_in.post("/webmail/bulk/INBOX/", {"action": "read", "uids": [uids["one"], uids["two"]]})
    assert response.status_code == 302 and response["Location"] == "/webmail/folders/INBOX/"
    assert {m.subject: m.seen for m in store.list("INBOX").messages} == {"one": True, "two": True, "three": False}
    assert "2 messages marked as read." in signed_in.get("/webmail/inbox/").content.decode()

    signed_in.post("/webmail/bulk/INBOX/", {"action": "move", "target": "Archive", "uids": [uids["three"]]})
    assert [m.subject for m in store.list("Archive").messages] == ["three"]

    signed_in.post("/webmail/bulk/INBOX/", {"action": "delete", "uids": [uids["one"]]})
    assert [m.subject for m in store.list("Trash").messages] == ["one"]
    trash_uid = store.list("Trash").messages[0].uid
    signed_in.post("/webmail/bulk/Trash/", {"action": "delete", "uids": [trash_uid]})
    assert store.list("Trash").total == 0  # deleting in Trash is for good


def test_bulk_action_on_everything_matching_the_search(signed_in, owner, monkeypatch):
    monkeypatch.setattr("portal.webmail.mail_list.PER_PAGE", 2)
    for index in range(5):
        deliver(owner, f"newsletter {index}", sender="News <news@list.test>")
    deliver(owner, "personal", sender="Amy <amy@friends.test>")

    page = signed_in.get("/webmail/inbox/?from=list.test").content.decode()
    assert "All 5 messages matching this search" in page
    signed_in.post("/webmail/bulk/INBOX/", {"action": "move", "target": "Archive", "all_matching": "1",
                                            "query": "from=list.test"})
    store = store_for(owner)
    assert [m.subject for m in store.list("INBOX").messages] == ["personal"]
    assert store.list("Archive").total == 5


def test_bulk_with_htmx_returns_the_list_with_a_status_line(signed_in, owner):
    deliver(owner, "one")
    uid = store_for(owner).list("INBOX").messages[0].uid
    response = signed_in.post("/webmail/bulk/INBOX/", {"action": "star", "uids": [uid]}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200 and '<section id="mail-list"' in page and "<html" not in page
    status = re.search(r'<p id="mail-status"[^>]*hx-swap-oob="true">([^<]*)</p>', page)
    assert status and status.group(1).startswith("1 message starred.")
    assert store_for(owner).list("INBOX").messages[0].starred


def test_bulk_input_that_cannot_be_done_changes_nothing(signed_in, owner):
    deliver(owner, "one")
    uid = store_for(owner).list("INBOX").messages[0].uid
    for data in ({"action": "read"}, {"action": "move", "uids": [uid]}, {"action": "move", "target": "Nowhere", "uids": [uid]},
                 {"action": "explode", "uids": [uid]}, {"action": "read", "uids": ["x"]},
                 {"action": "label", "uids": [uid], "label": "999"}):
        response = signed_in.post("/webmail/bulk/INBOX/", data, HTTP_HX_REQUEST="true")
        # htmx swaps no 4xx answer: the refusal comes back as the list with an alert above it
        assert response.status_code == 200, data
        assert re.search(r'<div class="alert alert--error" role="alert" id="bulk-problem"><div class="alert__body">'
                         r'[^<]+</div>', response.content.decode()), data
    message = store_for(owner).list("INBOX").messages[0]
    assert (message.seen, message.starred) == (False, False)
    assert signed_in.post("/webmail/bulk/Nowhere/", {"action": "read", "uids": [uid]}).status_code == 404


def test_bulk_with_nothing_chosen_says_so_with_htmx_and_without_javascript(signed_in, owner):
    deliver(owner, "one")
    told = "Nothing was changed: select at least one message first (tick the box beside it)."
    page = signed_in.post("/webmail/bulk/INBOX/", {"action": "read"}, HTTP_HX_REQUEST="true").content.decode()
    assert f'role="alert" id="bulk-problem"><div class="alert__body">{told}</div>' in page
    assert re.search(r'<p id="mail-status"[^>]*>1 message\.</p>', page)  # said once, in the alert

    response = signed_in.post("/webmail/bulk/INBOX/", {"action": "read"}, follow=True)
    assert response.redirect_chain == [("/webmail/folders/INBOX/", 302)]
    assert told in response.content.decode()
    assert store_for(owner).list("INBOX").messages[0].seen is False


def test_labels_are_made_applied_filtered_and_deleted(signed_in, owner):
    deliver(owner, "tagged")
    deliver(owner, "plain")
    response = signed_in.post("/webmail/labels/", {"label-name": "Receipts", "label-color": "#00aa55"})
    assert response.status_code == 302
    label = Label.objects.get(mailbox=owner, name="Receipts")
    uid = next(m.uid for m in store_for(owner).list("INBOX").messages if m.subject == "tagged")

    signed_in.post("/webmail/bulk/INBOX/", {"action": "label", "label": label.pk, "uids": [uid]})
    assert subjects(signed_in.get(f"/webmail/inbox/?label={label.pk}").content.decode()) == ["tagged"]
    assert "Receipts</span>" in signed_in.get("/webmail/inbox/").content.decode()

    assert signed_in.post("/webmail/labels/", {"label-name": "Receipts", "label-color": "#00aa55"}).status_code == 422
    signed_in.post("/webmail/labels/", {"action": "delete", "label": label.pk})
    assert not Label.objects.filter(pk=label.pk).exists()
    assert store_for(owner).list("INBOX").messages[-1].keywords == () or all(
        not m.keywords for m in store_for(owner).list("INBOX").messages)


def test_a_partners_labels_stay_with_each_mailbox(client, owner, alice):
    """On a hosting partner's account the mailboxes belong to different customers: each webmail
    sees only its own labels, never the partner's or another customer's."""
    from mailcore.partners.services import hosting_partner_enable

    hosting_partner_enable(account=alice.account, status="active")
    other = make_mailbox(alice.account, f"bob@{owner.domain.name}", password=PASSWORD)
    label_create(account=alice.account, name="Partner internal", color="#ff0000")
    label_create(account=alice.account, mailbox=other, name="Bob private", color="#00ff00")
    client.post("/webmail/", {"address": owner.address, "password": PASSWORD})

    page = client.get("/webmail/labels/").content.decode()
    assert "Partner internal" not in page and "Bob private" not in page
    bob_label = Label.objects.get(name="Bob private")
    assert client.post("/webmail/labels/", {"action": "delete", "label": bob_label.pk}).status_code == 404


def test_folders_are_created_renamed_and_deleted_after_a_confirmation(signed_in, owner):
    assert signed_in.post("/webmail/folders/", {"action": "create", "create-name": "Projects"}).status_code == 302
    deliver(owner, "filed")
    store = store_for(owner)
    store.move("INBOX", store.list("INBOX").messages[0].uid, "Projects")
    assert "Projects" in signed_in.get("/webmail/folders/").content.decode()

    assert signed_in.post("/webmail/folders/", {"action": "rename", "name": "Projects",
                                                "new_name": "Work"}).status_code == 302
    assert subjects(signed_in.get("/webmail/folders/Work/").content.decode()) == ["filed"]

    confirm = signed_in.post("/webmail/folders/", {"action": "delete", "name": "Work"})
    assert confirm.status_code == 200 and "deleted for good" in confirm.content.decode()
    assert "Work" in [folder.name for folder in store.folders()]
    signed_in.post("/webmail/folders/", {"action": "delete", "name": "Work", "confirm": "yes"})
    assert "Work" not in [folder.name for folder in store.folders()]
    assert signed_in.get("/webmail/folders/Work/").status_code == 404


def test_default_folders_are_refused_with_the_reason(signed_in):
    response = signed_in.post("/webmail/folders/", {"action": "delete", "name": "Sent", "confirm": "yes"})
    assert response.status_code == 422 and "every mailbox has" in response.content.decode()
    response = signed_in.post("/webmail/folders/", {"action": "create", "create-name": "INBOX"})
    assert response.status_code == 422


def test_a_conversation_joins_replies_from_the_inbox_and_our_own_from_sent(signed_in, owner):
    store = store_for(owner)
    store.append("INBOX", make_message("Plan", to=owner.address, headers={}).replace(
        b"Message-ID: <", b"X-Old-ID: <", 1).replace(b"Subject: Plan", b"Message-ID: <root@elsewhere.test>\nSubject: Plan"))
    store.append("Sent", make_message("Re: Plan", sender=owner.address, to="ann@elsewhere.test",
                                      body="Our answer", headers={"In-Reply-To": "<root@elsewhere.test>",
                                                                  "References": "<root@elsewhere.test>"}))
    store.append("INBOX", make_message("Unrelated", to=owner.address))
    root_uid = next(m.uid for m in store.list("INBOX").messages if m.subject == "Plan")

    page = signed_in.get(f"/webmail/conversations/INBOX/{root_uid}/").content.decode()
    assert "2 messages in this conversation" in page
    assert "Unrelated" not in page and "Sent</span>" in page


def test_another_mailboxes_owner_cannot_reach_these_pages_signed_out(client, owner):
    for path in ("/webmail/inbox/", "/webmail/folders/", "/webmail/labels/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/webmail/?next=")
    assert client.post("/webmail/bulk/INBOX/", {"action": "read", "uids": [1]}).status_code == 302


def test_drafts_open_in_compose_and_messages_on_their_page(signed_in, owner):
    store = store_for(owner)
    draft = store.append("Drafts", make_message("Half written", sender=owner.address, to="amy@elsewhere.test"),
                         flags=("\\Draft",))
    deliver(owner, "Arrived")
    inbox_uid = store.list("INBOX").messages[0].uid

    assert f'href="/webmail/compose/drafts/{draft}/" data-open' in signed_in.get("/webmail/folders/Drafts/").content.decode()
    assert f'href="/webmail/folders/INBOX/messages/{inbox_uid}/" data-open' in signed_in.get("/webmail/inbox/").content.decode()


def test_filters_follow_a_folder_renamed_in_the_webmail(signed_in, owner):
    from mailcore.rules.filters import FilterInput, mail_filter_create
    from mailcore.rules.models import SieveScript

    signed_in.post("/webmail/folders/", {"action": "create", "create-name": "Receipts"})
    rule = mail_filter_create(mailbox=owner, data=FilterInput(field="from", match="contains", value="shop",
                                                              action="move", folder="Receipts"))
    signed_in.post("/webmail/folders/", {"action": "rename", "name": "Receipts", "new_name": "Bills"})

    rule.refresh_from_db()
    assert rule.folder == "Bills" and '"Bills"' in SieveScript.objects.get(mailbox=owner).script
