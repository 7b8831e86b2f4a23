"""Junk that learns, as an owner uses it: "Spam" and "Not spam" in the webmail (one message or many),
through REST and through MCP. rspamd's Bayes counts for the mailbox change, the messages move in the
same action, and no copy is left behind. The webmail tests run on the embedded store and on the real
Dovecot (where the move also runs imapsieve's learning, which must not count twice)."""
import re
import uuid

import pytest

from mailcore.store.factory import store_for
from protection.rspamd import bayes_counts
from testkit.clients import new_key
from testkit.dovecot import dovecot_learns_with
from testkit.factories import make_mailbox, make_message
from protection.tests.conftest import OWNER_PASSWORD as PASSWORD

SPAMMY = ("Congratulations winner, claim your free prize now. Cheap pills, casino bonus and crypto profits "
          "guaranteed, limited offer, act now and click the link to unlock your reward {n} today")
HAMMY = ("Hi Ann, here are the notes from Tuesday's project meeting about the quarterly budget review and the "
         "schedule for the office move; let me know what you think before Friday {n}")


def unique_body(text: str) -> str:
    """rspamd remembers what it learned by the body's digest: each message of a test is its own."""
    return text.format(n=uuid.uuid4().hex)


def deliver(mailbox, subject: str, body: str, *, folder: str = "INBOX", sender="Offers <offers@shady.test>") -> int:
    raw = make_message(subject, unique_body(body), sender=sender, to=mailbox.address)
    store = store_for(mailbox)
    if folder == "INBOX":
        store.deliver(raw, recipient=mailbox.address, envelope_from="offers@shady.test")
    else:
        store.append(folder, raw)
    return next(m.uid for m in store.list(folder).messages if m.subject == subject)


def subjects(mailbox, folder: str) -> list[str]:
    return sorted(m.subject for m in store_for(mailbox).list(folder).messages)


@pytest.fixture
def owner(owner_on_each_store):
    return owner_on_each_store


@pytest.fixture
def signed_in(client, owner):
    response = client.post("/webmail/", {"address": owner.address, "password": PASSWORD})
    assert response.status_code == 302
    return client


@pytest.fixture
def learning(rspamd_settings, request):
    """Scanning on; on Dovecot, its imapsieve learning too (as in production)."""
    if request.node.callspec.params.get("owner_on_each_store") == "imap":
        dovecot = request.getfixturevalue("imap_settings")
        dovecot_learns_with(dovecot, controller_url=rspamd_settings.controller_url,
                            password=rspamd_settings.password)
    return rspamd_settings


def test_spam_on_a_message_learns_it_for_the_mailbox_and_files_it_in_junk(learning, signed_in, owner):
    uid = deliver(owner, "You won", SPAMMY)
    before = bayes_counts(scope=owner.address)

    response = signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/actions/", {"action": "spam"})

    assert response.status_code == 302 and response["Location"] == "/webmail/folders/INBOX/"
    assert bayes_counts(scope=owner.address) == {"ham": before["ham"], "spam": before["spam"] + 1}
    assert subjects(owner, "INBOX") == [] and subjects(owner, "Junk") == ["You won"]
    page = signed_in.get("/webmail/folders/INBOX/").content.decode()
    assert ("This message was marked as spam and moved to Junk. Your spam filter learned from it: similar mail "
            "will go to Junk.") in page


def test_not_spam_in_junk_learns_it_as_wanted_and_moves_it_to_the_inbox_in_one_action(learning, signed_in, owner):
    uid = deliver(owner, "Meeting notes", HAMMY, folder="Junk")
    before = bayes_counts(scope=owner.address)
    page = signed_in.get(f"/webmail/folders/Junk/messages/{uid}/").content.decode()
    assert 'value="not_spam"' in page and 'value="spam"' not in page

    response = signed_in.post(f"/webmail/folders/Junk/messages/{uid}/actions/", {"action": "not_spam"})

    assert response.status_code == 302 and response["Location"] == "/webmail/folders/Junk/"
    assert bayes_counts(scope=owner.address) == {"ham": before["ham"] + 1, "spam": before["spam"]}
    assert subjects(owner, "Junk") == [] and subjects(owner, "INBOX") == ["Meeting notes"]
    (moved,) = store_for(owner).list("INBOX").messages
    assert "$NotJunk" in store_for(owner).fetch("INBOX", moved.uid).flags


def test_bulk_spam_and_not_spam_learn_every_selected_message_once(learning, signed_in, owner):
    uids = [deliver(owner, f"Prize {n}", SPAMMY) for n in range(3)]
    kept = deliver(owner, "Lunch", HAMMY)
    before = bayes_counts(scope=owner.address)

    response = signed_in.post("/webmail/bulk/INBOX/", {"action": "spam", "uids": uids}, HTTP_HX_REQUEST="true")

    status = re.search(r'<p id="mail-status"[^>]*hx-swap-oob="true">([^<]*)</p>', response.content.decode())
    assert status and status.group(1).startswith("3 messages were marked as spam and moved to Junk. Your spam "
                                                 "filter learned from them: similar mail will go to Junk.")
    assert bayes_counts(scope=owner.address) == {"ham": before["ham"], "spam": before["spam"] + 3}
    assert subjects(owner, "INBOX") == ["Lunch"] and subjects(owner, "Junk") == ["Prize 0", "Prize 1", "Prize 2"]

    junk = [m.uid for m in store_for(owner).list("Junk").messages if m.subject != "Prize 0"]
    signed_in.post("/webmail/bulk/Junk/", {"action": "not_spam", "uids": junk})

    # learned as spam, then as wanted mail: rspamd moves them from one class to the other
    assert bayes_counts(scope=owner.address) == {"ham": before["ham"] + 2, "spam": before["spam"] + 1}
    assert subjects(owner, "Junk") == ["Prize 0"] and subjects(owner, "INBOX") == ["Lunch", "Prize 1", "Prize 2"]
    assert kept in {m.uid for m in store_for(owner).list("INBOX").messages}


def test_when_rspamd_cannot_be_reached_the_message_is_still_filed_and_the_owner_told(settings, signed_in, owner):
    settings.RSPAMD_URL = settings.RSPAMD_CONTROLLER_URL = "http://127.0.0.1:9"
    uid = deliver(owner, "You won", SPAMMY)

    signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/actions/", {"action": "spam"})

    assert subjects(owner, "Junk") == ["You won"] and subjects(owner, "INBOX") == []
    page = signed_in.get("/webmail/folders/INBOX/").content.decode()
    assert "The spam filter could not be reached, so it did not learn this time." in page


# REST and MCP (the embedded store) --------------------------------------------------------------

@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, f"ann@d{uuid.uuid4().hex[:10]}.test")


@pytest.mark.django_db
def test_rest_spam_and_not_spam_learn_and_move(rspamd_settings, api, alice, mailbox):
    store_for(mailbox).ensure_folders()
    uids = [deliver(mailbox, f"Prize {n}", SPAMMY) for n in range(2)]
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["mailboxes:read", "mailboxes:write"]))
    before = bayes_counts(scope=mailbox.address)

    spam = api.post(f"/inbox/spam?email={mailbox.address}", {"uids": uids}, format="json")

    assert spam.status_code == 200, spam.content
    assert spam.json() == {"folder": "Junk", "count": 2, "learned": 2, "learning": "learned", "uid": None}
    assert bayes_counts(scope=mailbox.address) == {"ham": before["ham"], "spam": before["spam"] + 2}
    junk_uid = store_for(mailbox).list("Junk").messages[0].uid

    ham = api.post(f"/inbox/not-spam?email={mailbox.address}&folder=Junk", {"uids": [junk_uid]}, format="json")

    assert ham.status_code == 200
    (moved,) = store_for(mailbox).list("INBOX").messages
    assert ham.json() == {"folder": "INBOX", "count": 1, "learned": 1, "learning": "learned", "uid": moved.uid}
    assert store_for(mailbox).list("Junk").total == 1
    assert bayes_counts(scope=mailbox.address) == {"ham": before["ham"] + 1, "spam": before["spam"] + 1}


@pytest.mark.django_db
def test_rest_learning_needs_write_scope_and_your_own_mailbox(rspamd_settings, api, alice, charlie, mailbox):
    store_for(mailbox).ensure_folders()
    uid = deliver(mailbox, "Prize", SPAMMY)
    before = bayes_counts(scope=mailbox.address)

    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["mailboxes:read"]))
    assert api.post(f"/inbox/spam?email={mailbox.address}", {"uids": [uid]}, format="json").status_code == 403
    api.credentials(HTTP_X_API_KEY=new_key(charlie, scopes=["mailboxes:read", "mailboxes:write"]))
    assert api.post(f"/inbox/spam?email={mailbox.address}", {"uids": [uid]}, format="json").status_code == 404
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["mailboxes:write"]))
    refused = api.post(f"/inbox/spam?email={mailbox.address}", {"uids": ["1"]}, format="json")
    assert refused.status_code == 422 and "uids" in refused.json()["errors"]

    assert subjects(mailbox, "INBOX") == ["Prize"] and bayes_counts(scope=mailbox.address) == before


@pytest.mark.django_db
def test_mcp_mark_spam_and_mark_not_spam(rspamd_settings, api, alice, mailbox):
    store_for(mailbox).ensure_folders()
    uid = deliver(mailbox, "Prize", SPAMMY)
    key = new_key(alice, scopes=["mailboxes:read", "mailboxes:write"])
    before = bayes_counts(scope=mailbox.address)

    def call(name, arguments):
        response = api.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"name": name, "arguments": arguments}},
                            format="json", HTTP_X_API_KEY=key, HTTP_MCP_PROTOCOL_VERSION="2025-11-25")
        assert response.status_code == 200, response.content
        return response.json()["result"]

    spam = call("mark_spam", {"email": mailbox.address, "uids": [uid]})
    (junk,) = store_for(mailbox).list("Junk").messages
    assert spam["structuredContent"] == {"email": mailbox.address, "folder": "Junk", "count": 1, "learned": 1,
                                         "learning": "learned", "uid": junk.uid}
    ham = call("mark_not_spam", {"email": mailbox.address, "folder": "Junk", "uids": [junk.uid]})
    assert ham["structuredContent"]["folder"] == "INBOX" and ham["structuredContent"]["learned"] == 1
    assert subjects(mailbox, "INBOX") == ["Prize"] and store_for(mailbox).list("Junk").total == 0
    # learned as spam, then moved to wanted mail
    assert bayes_counts(scope=mailbox.address) == {"ham": before["ham"] + 1, "spam": before["spam"]}
