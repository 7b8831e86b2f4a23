"""One contract for both mail stores: the embedded store and the imap store against a real
Dovecot (logged in through the master user). Every test runs on both."""
from datetime import UTC, datetime

import pytest

from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import (
    DEFAULT_FOLDERS,
    FLAGGED,
    SEEN,
    Folder,
    FolderNotFound,
    MailStore,
    MessageNotFound,
    StoreError,
)
from mailcore.store.factory import store_for
from testkit.dovecot import managed_mailbox, message, use_store

DATE = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


@pytest.fixture
def mailbox(plans) -> Mailbox:
    return managed_mailbox(password="owner password 1")


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db),
    # Dovecot reads the mailbox through its own connection: the rows must be committed.
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def store(request, settings, mailbox) -> MailStore:
    """The store the app uses for the mailbox with MAIL_STORE set to the parameter."""
    use_store(request, settings)
    return store_for(mailbox)


def uids(store: MailStore, folder: str = "INBOX", **filters) -> list[int]:
    return [summary.uid for summary in store.list(folder, **filters).messages]


def test_a_new_mailbox_has_the_default_folders_with_their_special_use(store):
    store.ensure_folders()

    assert store.folders() == [Folder(name, special_use, 0, 0) for name, special_use in DEFAULT_FOLDERS.items()]


def test_ensure_folders_twice_changes_nothing(store):
    store.ensure_folders()
    store.ensure_folders()

    assert [folder.name for folder in store.folders()] == list(DEFAULT_FOLDERS)


def test_folders_count_total_and_unseen_messages(store):
    store.ensure_folders()
    store.append("INBOX", message("one"))
    store.append("INBOX", message("two"), flags=(SEEN,))
    store.append("Archive", message("three"))

    counts = {folder.name: (folder.total, folder.unseen) for folder in store.folders()}

    assert counts == {"INBOX": (2, 1), "Sent": (0, 0), "Drafts": (0, 0), "Archive": (1, 1), "Junk": (0, 0),
                      "Trash": (0, 0)}


def test_an_appended_message_comes_back_byte_identical_and_unseen(store):
    raw = message("Round trip", "Every byte counts.\r\nLine two.")

    uid = store.append("INBOX", raw, date=DATE)
    stored = store.fetch("INBOX", uid)

    assert (stored.uid, stored.folder, stored.raw, stored.flags, stored.internal_date) == (uid, "INBOX", raw, (), DATE)
    assert store.fetch("INBOX", uid).seen is False  # fetching does not mark it seen


def test_append_keeps_flags_and_keywords(store):
    uid = store.append("INBOX", message("flagged"), flags=(SEEN, FLAGGED, "$label7"))

    stored = store.fetch("INBOX", uid)

    assert (stored.seen, stored.starred, sorted(stored.flags)) == (True, True, sorted([SEEN, FLAGGED, "$label7"]))


def test_list_summarises_each_message(store):
    plain = store.append("INBOX", message("Quarterly report", sender="Bob Example <bob@example.test>"))
    with_file = store.append("INBOX", message("Invoice", attachment=True, sender="carol@example.test"))

    page = store.list("INBOX")

    first, second = page.messages
    assert (page.total, page.page, page.per_page) == (2, 1, 50)
    assert (first.uid, first.subject, first.from_, first.date, first.seen, first.starred, first.has_attachments,
            first.keywords) == (with_file, "Invoice", "carol@example.test", DATE, False, False, True, ())
    assert (second.uid, second.subject, second.from_, second.has_attachments) == (
        plain, "Quarterly report", "Bob Example <bob@example.test>", False)
    assert second.size == len(store.fetch("INBOX", plain).raw)


def test_list_is_newest_first_and_pages(store):
    appended = [store.append("INBOX", message(f"message {n}")) for n in range(5)]
    newest_first = appended[::-1]

    second_page = store.list("INBOX", page=2, per_page=2)
    last_page = store.list("INBOX", page=3, per_page=2)
    beyond = store.list("INBOX", page=4, per_page=2)

    assert uids(store) == newest_first
    assert ([m.uid for m in second_page.messages], second_page.total, second_page.page) == (newest_first[2:4], 5, 2)
    assert ([m.subject for m in last_page.messages], last_page.total) == (["message 0"], 5)
    assert (beyond.messages, beyond.total) == ([], 5)


def test_list_filters_starred_unseen_and_keyword(store):
    starred = store.append("INBOX", message("starred"), flags=(FLAGGED, SEEN))
    unseen = store.append("INBOX", message("unseen"))
    labelled = store.append("INBOX", message("labelled"), flags=(SEEN, "$label3"))

    assert uids(store, starred_only=True) == [starred]
    assert uids(store, unseen_only=True) == [unseen]
    assert uids(store, keyword="$label3") == [labelled]
    assert store.list("INBOX", keyword="$label3").total == 1
    assert uids(store, keyword="$label4") == []


def test_set_flags_marks_seen_starred_and_keywords_and_undoes_them(store):
    uid = store.append("INBOX", message("flags"))

    store.set_flags("INBOX", uid, seen=True, starred=True, add_keywords=("$label1", "$label2"))
    marked = store.fetch("INBOX", uid)
    store.set_flags("INBOX", uid, seen=False, starred=False, remove_keywords=("$label1",))
    unmarked = store.fetch("INBOX", uid)

    assert sorted(marked.flags) == sorted([SEEN, FLAGGED, "$label1", "$label2"])
    assert unmarked.flags == ("$label2",)
    assert store.list("INBOX").messages[0].keywords == ("$label2",)


def test_set_flags_leaves_unnamed_flags_alone(store):
    uid = store.append("INBOX", message("flags"), flags=(SEEN, "$label1"))

    store.set_flags("INBOX", uid, starred=True)

    assert sorted(store.fetch("INBOX", uid).flags) == sorted([SEEN, FLAGGED, "$label1"])


def test_move_takes_a_message_to_another_folder_with_a_new_uid(store):
    store.ensure_folders()
    raw = message("to archive")
    store.append("Archive", message("already there"))
    uid = store.append("INBOX", raw, flags=(SEEN,))

    new_uid = store.move("INBOX", uid, "Archive")

    assert uids(store, "INBOX") == []
    assert uids(store, "Archive")[0] == new_uid
    assert (store.fetch("Archive", new_uid).raw, store.fetch("Archive", new_uid).seen) == (raw, True)
    with pytest.raises(MessageNotFound):
        store.fetch("INBOX", uid)


def test_delete_removes_only_that_message_permanently(store):
    store.ensure_folders()
    keep = store.append("INBOX", message("keep"))
    gone = store.append("INBOX", message("gone"))

    store.delete("INBOX", gone)

    assert uids(store) == [keep]
    assert [(f.name, f.total) for f in store.folders() if f.total] == [("INBOX", 1)]
    with pytest.raises(MessageNotFound):
        store.fetch("INBOX", gone)


def test_search_finds_by_subject_and_by_body_newest_first(store):
    report = store.append("INBOX", message("Quarterly report", "numbers inside"))
    lunch = store.append("INBOX", message("Lunch", "the quarterly numbers were good"))
    holiday = store.append("INBOX", message("Holiday", "sunny beach"))

    assert [m.uid for m in store.search("INBOX", "quarterly")] == [lunch, report]
    assert [m.uid for m in store.search("INBOX", "beach")] == [holiday]
    assert [m.uid for m in store.search("INBOX", "quarterly numbers")] == [lunch, report]
    assert [m.uid for m in store.search("INBOX", "quarterly", limit=1)] == [lunch]
    assert store.search("INBOX", "nowhere") == []


def test_search_finds_by_sender(store):
    from_carol = store.append("INBOX", message("hi", sender="Carol Jones <carol@example.test>"))
    store.append("INBOX", message("hi"))

    assert [m.uid for m in store.search("INBOX", "carol")] == [from_carol]


def test_remove_keyword_everywhere_clears_it_in_every_folder(store):
    store.ensure_folders()
    inbox = store.append("INBOX", message("a"), flags=("$label5", "$label6"))
    archived = store.append("Archive", message("b"), flags=("$label5",))

    store.remove_keyword_everywhere("$label5")

    assert (store.fetch("INBOX", inbox).flags, store.fetch("Archive", archived).flags) == (("$label6",), ())


def test_storage_used_grows_by_the_size_of_an_appended_message(store):
    before = store.storage_used()

    store.append("INBOX", message("ten kibibytes", pad_to=10240))

    assert (before, store.storage_used()) == (0, 10240)


def test_a_missing_folder_is_folder_not_found(store):
    with pytest.raises(FolderNotFound):
        store.list("Nope")
    with pytest.raises(FolderNotFound):
        store.append("Nope", message("lost"))
    uid = store.append("INBOX", message("stays"))
    with pytest.raises(FolderNotFound):
        store.move("INBOX", uid, "Nope")
    assert uids(store) == [uid]


def test_a_missing_message_is_message_not_found(store):
    store.append("INBOX", message("present"))

    for operation in (
        lambda: store.fetch("INBOX", 999),
        lambda: store.set_flags("INBOX", 999, seen=True),
        lambda: store.move("INBOX", 999, "Trash"),
        lambda: store.delete("INBOX", 999),
    ):
        with pytest.raises(MessageNotFound):
            operation()
    assert store.list("INBOX").total == 1


@pytest.mark.parametrize("folder", ["INBOX\r\nA1 LOGOUT", "", "Trash\0"])
def test_a_folder_name_that_could_break_a_command_is_refused(store, folder):
    with pytest.raises(FolderNotFound):
        store.list(folder)


@pytest.mark.parametrize("uid", [0, -1])
def test_a_uid_that_is_not_a_positive_integer_is_refused(store, uid):
    store.append("INBOX", message("present"))

    with pytest.raises(MessageNotFound):
        store.fetch("INBOX", uid)


def test_a_keyword_that_is_not_an_imap_atom_is_refused(store):
    uid = store.append("INBOX", message("present"))

    with pytest.raises(StoreError):
        store.set_flags("INBOX", uid, add_keywords=("two words",))
    assert store.fetch("INBOX", uid).flags == ()


def test_an_inline_image_is_not_an_attachment(store):
    raw = (b"From: bob@example.test\r\nSubject: picture\r\nMIME-Version: 1.0\r\n"
           b'Content-Type: multipart/related; boundary="b2"\r\n\r\n--b2\r\n'
           b'Content-Type: text/html; charset=utf-8\r\n\r\n<img src="cid:logo">\r\n--b2\r\n'
           b'Content-Type: image/png; name="logo.png"\r\nContent-Disposition: inline; filename="logo.png"\r\n'
           b"Content-ID: <logo>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--b2--\r\n")
    store.append("INBOX", raw)

    assert store.list("INBOX").messages[0].has_attachments is False


def test_encoded_subjects_are_decoded_and_searchable(store):
    uid = store.append("INBOX", message("=?utf-8?q?Caf=C3=A9_menu?=", "Today: soup."))
    store.append("INBOX", message("Cafeteria"))

    assert store.list("INBOX").messages[1].subject == "Café menu"
    assert [m.uid for m in store.search("INBOX", "café")] == [uid]


def test_header_values_reads_one_header_of_each_message_in_order(store):
    store.ensure_folders()
    first = store.append("INBOX", b"Authentication-Results: mx.one; spf=pass\r\n"
                                  b"Authentication-Results: mx.two;\r\n dkim=fail\r\n" + message("one"))
    second = store.append("INBOX", message("two"))
    found = store.header_values("INBOX", [first, second, 999_999], "Authentication-Results")
    assert found == {first: ["mx.one; spf=pass", "mx.two; dkim=fail"], second: []}


def test_header_values_refuses_a_name_that_is_not_a_header_name(store):
    store.ensure_folders()
    uid = store.append("INBOX", message("one"))
    with pytest.raises(ValueError):
        store.header_values("INBOX", [uid], "Subject)] BODY[")
