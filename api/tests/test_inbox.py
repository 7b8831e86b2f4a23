"""/inbox on the embedded store: list, read, flag, label, move, delete, folders, attachments."""
import pytest

from testkit.clients import new_key
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db

ADDRESS = "inbox@example.test"


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, ADDRESS)


@pytest.fixture
def store(mailbox):
    return store_for(mailbox)


def test_the_list_envelope_pages_newest_first(alice_api, store):
    uids = [store.append("INBOX", make_message(f"Message {n}")) for n in range(5)]
    response = alice_api.get("/inbox", {"email": ADDRESS, "per_page": 2, "page": 2})
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["page"], body["per_page"]) == (5, 2, 2)
    assert [m["uid"] for m in body["messages"]] == [uids[2], uids[1]]
    first = body["messages"][0]
    assert set(first) == {"uid", "subject", "from", "date", "seen", "starred", "has_attachments", "size", "labels"}
    assert first["subject"] == "Message 2" and first["from"] == "Ann <ann@elsewhere.test>"
    assert first["seen"] is False and first["starred"] is False and first["has_attachments"] is False


def test_defaults_are_inbox_page_1_and_50_per_page(alice_api, store):
    store.append("INBOX", make_message())
    body = alice_api.get("/inbox", {"email": ADDRESS}).json()
    assert (body["total"], body["page"], body["per_page"]) == (1, 1, 50)


@pytest.mark.parametrize("params, field", [({}, "email"), ({"email": ADDRESS, "per_page": 101}, "per_page"),
                                           ({"email": ADDRESS, "page": 0}, "page")])
def test_bad_parameters_are_422(alice_api, mailbox, params, field):
    response = alice_api.get("/inbox", params)
    assert response.status_code == 422
    assert field in response.json()["errors"]


def test_starred_and_unseen_filters(alice_api, store):
    plain = store.append("INBOX", make_message("plain"))
    starred = store.append("INBOX", make_message("starred"), flags=("\\Flagged", "\\Seen"))
    assert [m["uid"] for m in alice_api.get("/inbox", {"email": ADDRESS, "starred_only": "true"}).json()["messages"]] == [starred]
    assert [m["uid"] for m in alice_api.get("/inbox", {"email": ADDRESS, "unseen_only": "true"}).json()["messages"]] == [plain]


def test_a_message_has_headers_bodies_and_attachments(alice_api, store):
    pdf = bytes(range(256)) * 4
    uid = store.append("INBOX", make_message("Invoice", "See attached.", html="<p>See <b>attached</b>.</p>",
                                             attachments=[("invoice.pdf", "application/pdf", pdf)]))
    response = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS})
    assert response.status_code == 200
    message = response.json()
    assert message["subject"] == "Invoice"
    assert message["body_text"].strip() == "See attached."
    assert message["body_html"].strip() == "<p>See <b>attached</b>.</p>"
    assert message["to"] == [ADDRESS]
    assert {"name": "Subject", "value": "Invoice"} in message["headers"]
    [attachment] = message["attachments"]
    assert (attachment["filename"], attachment["content_type"], attachment["size"]) == ("invoice.pdf", "application/pdf", 1024)
    download = alice_api.get(f"/inbox/{uid}/attachments/{attachment['index']}", {"email": ADDRESS})
    assert download.status_code == 200
    assert download.content == pdf
    assert 'filename="invoice.pdf"' in download["Content-Disposition"]
    listed = alice_api.get("/inbox", {"email": ADDRESS}).json()["messages"][0]
    assert listed["has_attachments"] is True
    assert alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()["seen"] is False  # reading does not mark seen


def test_an_attachment_named_outside_latin_1_downloads_under_its_name_and_cannot_run(alice_api, store, client,
                                                                                      mailbox):
    """RFC 6266 filename* (not one RFC 2047 word for the whole header) and the webmail's download policy,
    the same headers in both: a browser saves отчёт.html under that name and never runs it in our origin."""
    from urllib.parse import unquote

    from mailcore.mailboxes.services import mailbox_set_password

    uid = store.append("INBOX", make_message("Report", attachments=[
        ("отчёт.html", "text/html", b"<script>alert(document.cookie)</script>")]))
    [attachment] = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()["attachments"]
    rest = alice_api.get(f"/inbox/{uid}/attachments/{attachment['index']}", {"email": ADDRESS})
    mailbox_set_password(mailbox=mailbox, password="mailbox password 1")
    client.post("/webmail/", {"address": ADDRESS, "password": "mailbox password 1"})
    webmail = client.get(f"/webmail/folders/INBOX/messages/{uid}/attachments/{attachment['index']}/")
    for download in (rest, webmail):
        assert download.status_code == 200
        disposition = download["Content-Disposition"]
        assert "=?" not in disposition
        kind, fallback, extended = [part.strip() for part in disposition.split(";")]
        assert (kind, fallback) == ("attachment", 'filename="attachment.html"')
        assert extended.startswith("filename*=UTF-8''") and unquote(extended.split("''", 1)[1]) == "отчёт.html"
        assert download["Content-Type"] == "application/octet-stream"
        assert download["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'; sandbox"
        assert download["X-Content-Type-Options"] == "nosniff"
    assert rest["Content-Disposition"] == webmail["Content-Disposition"]


def test_hostile_html_is_sanitized(alice_api, store):
    hostile = (
        '<div onclick="steal()">Hi<script>alert(document.cookie)</script>'
        '<a href="javascript:alert(1)">click</a><a href="https://example.test/ok">ok</a>'
        '<img src="https://tracker.test/pixel.gif"><iframe src="https://evil.test"></iframe>'
        '<form action="https://evil.test"><input name="password"></form>'
        '<p style="position:fixed;color:red">styled</p></div>'
    )
    uid = store.append("INBOX", make_message("Hostile", html=hostile))
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    html = message["body_html"]
    for forbidden in ("<script", "onclick", "javascript:", "<iframe", "<form", "<input", "tracker.test", "position"):
        assert forbidden not in html, forbidden
    assert 'href="https://example.test/ok"' in html and "color:red" in html
    assert message["remote_images_blocked"] is True
    allowed = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS, "allow_remote_images": "true"}).json()
    assert 'src="https://tracker.test/pixel.gif"' in allowed["body_html"]
    assert "<script" not in allowed["body_html"]


def test_patch_sets_seen_and_starred(alice_api, store):
    uid = store.append("INBOX", make_message())
    response = alice_api.patch(f"/inbox/{uid}?email={ADDRESS}", {"seen": True, "starred": True}, format="json")
    assert response.status_code == 200
    assert response.json() == {"uid": uid, "folder": "INBOX", "seen": True, "starred": True, "labels": []}
    assert store.fetch("INBOX", uid).flags[:2] == ("\\Seen", "\\Flagged")


def test_patch_moves_to_another_folder(alice_api, store):
    uid = store.append("INBOX", make_message("to archive"))
    moved = alice_api.patch(f"/inbox/{uid}?email={ADDRESS}", {"folder": "Archive"}, format="json").json()
    assert moved["folder"] == "Archive"
    assert alice_api.get("/inbox", {"email": ADDRESS}).json()["total"] == 0
    archived = alice_api.get("/inbox", {"email": ADDRESS, "folder": "Archive"}).json()["messages"]
    assert [(m["uid"], m["subject"]) for m in archived] == [(moved["uid"], "to archive")]


def test_moving_to_a_missing_folder_is_404_and_changes_nothing(alice_api, store):
    uid = store.append("INBOX", make_message())
    response = alice_api.patch(f"/inbox/{uid}?email={ADDRESS}", {"folder": "Nowhere", "seen": True}, format="json")
    assert response.status_code == 404
    assert "Nowhere" in response.json()["detail"]
    assert alice_api.get("/inbox", {"email": ADDRESS}).json()["total"] == 1


def test_delete_is_permanent(alice_api, store):
    uid = store.append("INBOX", make_message())
    assert alice_api.delete(f"/inbox/{uid}?email={ADDRESS}").status_code == 204
    assert alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).status_code == 404
    assert all(folder["total"] == 0 for folder in alice_api.get("/inbox/folders", {"email": ADDRESS}).json()["folders"])


def test_folders_lists_every_folder_with_counts(alice_api, store):
    store.append("INBOX", make_message())
    store.append("INBOX", make_message(), flags=("\\Seen",))
    folders = {f["name"]: f for f in alice_api.get("/inbox/folders", {"email": ADDRESS}).json()["folders"]}
    assert set(folders) == {"INBOX", "Sent", "Drafts", "Archive", "Junk", "Trash"}
    assert folders["INBOX"] == {"name": "INBOX", "special_use": None, "total": 2, "unseen": 1}
    assert folders["Trash"]["special_use"] == "\\Trash"


def test_an_unknown_uid_is_404(alice_api, mailbox):
    response = alice_api.get("/inbox/999", {"email": ADDRESS})
    assert response.status_code == 404


def test_another_accounts_mailbox_is_404_everywhere(charlie_api, store):
    uid = store.append("INBOX", make_message())
    for method, path in [("get", f"/inbox?email={ADDRESS}"), ("get", f"/inbox/{uid}?email={ADDRESS}"),
                         ("patch", f"/inbox/{uid}?email={ADDRESS}"), ("delete", f"/inbox/{uid}?email={ADDRESS}"),
                         ("get", f"/inbox/folders?email={ADDRESS}"), ("get", f"/mail/mailbox-usage?email={ADDRESS}")]:
        response = getattr(charlie_api, method)(path, {"seen": True} if method == "patch" else None, format="json")
        assert response.status_code == 404, path
    assert store.fetch("INBOX", uid).seen is False


def test_reading_needs_mailboxes_read_and_changing_needs_mailboxes_write(api, alice, store):
    uid = store.append("INBOX", make_message())
    reader = new_key(alice, scopes=["mailboxes:read"])
    assert api.get("/inbox", {"email": ADDRESS}, HTTP_X_API_KEY=reader).status_code == 200
    refused = api.patch(f"/inbox/{uid}?email={ADDRESS}", {"seen": True}, format="json", HTTP_X_API_KEY=reader)
    assert refused.status_code == 403
    assert refused.json() == {"detail": "This API key lacks the 'mailboxes:write' scope."}
    assert api.delete(f"/inbox/{uid}?email={ADDRESS}", HTTP_X_API_KEY=reader).status_code == 403
    assert api.get("/inbox", {"email": ADDRESS}, HTTP_X_API_KEY=new_key(alice, scopes=["send"])).status_code == 403
    writer = new_key(alice, scopes=["mailboxes:write"])
    assert api.patch(f"/inbox/{uid}?email={ADDRESS}", {"seen": True}, format="json", HTTP_X_API_KEY=writer).status_code == 200
