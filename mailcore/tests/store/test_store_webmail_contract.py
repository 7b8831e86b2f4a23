"""The store's webmail operations, one contract for both stores (embedded, and imap against the real
Dovecot): server-side sort and search criteria, folder management, many messages at once, and the
members of a conversation."""
from datetime import UTC, date, datetime

import pytest

from mailcore.store.base import FLAGGED, SEEN, Criteria, FolderNotFound, MailStore, StoreError
from mailcore.store.factory import store_for
from testkit.dovecot import managed_mailbox, message, use_store


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db),
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def store(request, settings, plans) -> MailStore:
    use_store(request, settings)
    mailbox = managed_mailbox(password="owner password 1")
    found = store_for(mailbox)
    found.ensure_folders()
    return found


def subjects(store: MailStore, folder: str = "INBOX", **kwargs) -> list[str]:
    return [summary.subject for summary in store.list(folder, **kwargs).messages]


def raw(subject: str, *, sender: str = "Bob Example <bob@example.test>", to: str = "owner@example.test",
        body: str = "Hello.", date_header: str = "Wed, 04 Mar 2026 05:06:07 +0000", message_id: str = "",
        references: str = "", attachment: bool = False) -> bytes:
    made = message(subject, body, sender=sender, date=date_header, attachment=attachment)
    made = made.replace(b"To: owner@example.test", f"To: {to}".encode(), 1)
    if message_id:
        start = made.index(b"Message-ID: ")
        end = made.index(b"\r\n", start)
        made = made[:start] + f"Message-ID: {message_id}".encode() + made[end:]
    if references:
        made = f"In-Reply-To: {references.split()[-1]}\r\nReferences: {references}\r\n".encode() + made
    return made


def test_lists_sort_by_date_subject_sender_and_size_both_ways(store):
    store.append("INBOX", raw("banana", sender="zed@example.test", date_header="Mon, 02 Mar 2026 10:00:00 +0000"))
    store.append("INBOX", raw("Apple", sender="amy@example.test", date_header="Wed, 04 Mar 2026 10:00:00 +0000",
                              body="x" * 2000))
    store.append("INBOX", raw("cherry", sender="mo@example.test", date_header="Tue, 03 Mar 2026 10:00:00 +0000"))

    assert subjects(store) == ["cherry", "Apple", "banana"]  # arrival, newest first
    assert subjects(store, sort="date") == ["Apple", "cherry", "banana"]
    assert subjects(store, sort="date", reverse=False) == ["banana", "cherry", "Apple"]
    assert subjects(store, sort="subject", reverse=False) == ["Apple", "banana", "cherry"]
    assert subjects(store, sort="from", reverse=False) == ["Apple", "cherry", "banana"]
    assert subjects(store, sort="size")[0] == "Apple"


def test_an_unknown_sort_is_refused(store):
    with pytest.raises(StoreError):
        store.list("INBOX", sort="colour")


def test_sorted_lists_page_on_the_server(store):
    for letter in "edcba":
        store.append("INBOX", raw(letter))

    page = store.list("INBOX", sort="subject", reverse=False, page=2, per_page=2)

    assert ([m.subject for m in page.messages], page.total) == (["c", "d"], 5)


def test_search_criteria_each_narrow_the_list(store):
    store.append("INBOX", raw("Quarterly invoice", sender="billing@vendor.test", body="Amount due: 42"),
                 date=datetime(2026, 3, 1, 12, tzinfo=UTC))
    store.append("INBOX", raw("Lunch?", sender="amy@friends.test", to="team@example.test", body="Pizza at noon"),
                 flags=(SEEN, FLAGGED), date=datetime(2026, 3, 5, 12, tzinfo=UTC))
    store.append("INBOX", raw("Contract", sender="legal@vendor.test", attachment=True, body="Signed copy"),
                 flags=(SEEN,), date=datetime(2026, 3, 9, 12, tzinfo=UTC))

    def found(**fields) -> list[str]:
        return subjects(store, criteria=Criteria(**fields))

    assert found(from_="vendor.test") == ["Contract", "Quarterly invoice"]
    assert found(to="team@example") == ["Lunch?"]
    assert found(subject="invoice") == ["Quarterly invoice"]
    assert found(body="pizza") == ["Lunch?"]
    assert found(text="signed") == ["Contract"]
    assert found(since=date(2026, 3, 5)) == ["Contract", "Lunch?"]
    assert found(before=date(2026, 3, 5)) == ["Quarterly invoice"]
    assert found(since=date(2026, 3, 2), before=date(2026, 3, 9)) == ["Lunch?"]
    assert found(has_attachment=True) == ["Contract"]
    assert found(unseen=True) == ["Quarterly invoice"]
    assert found(starred=True) == ["Lunch?"]
    assert found(from_="vendor.test", has_attachment=True) == ["Contract"]
    assert found(from_="nobody.test") == []
    assert store.uids("INBOX", Criteria(from_="vendor.test")) == sorted(
        m.uid for m in store.list("INBOX", criteria=Criteria(from_="vendor.test")).messages)[::-1]


def test_search_finds_words_outside_ascii(store):
    store.append("INBOX", raw("Café meeting", body="À bientôt"))
    store.append("INBOX", raw("Other"))

    assert subjects(store, criteria=Criteria(subject="café")) == ["Café meeting"]


def test_owner_folders_are_created_renamed_and_deleted(store):
    store.create_folder("Projects")
    store.create_folder("Projects/2026")
    store.append("Projects", raw("kept"))

    store.rename_folder("Projects", "Work")
    names = [folder.name for folder in store.folders()]

    assert "Work" in names and "Work/2026" in names and "Projects" not in names
    assert subjects(store, "Work") == ["kept"]
    with pytest.raises(StoreError, match="subfolders"):
        store.delete_folder("Work")
    store.delete_folder("Work/2026")
    store.delete_folder("Work")
    assert "Work" not in [folder.name for folder in store.folders()]


def test_folder_counts_are_each_folders_own_whatever_its_name(store):
    for name in ("Reçus 2026", "Projects/Été", "12"):
        store.create_folder(name)
    for n in range(3):
        store.append("Reçus 2026", raw(f"receipt {n}"))
    store.append("Projects/Été", raw("summer"), flags=("\\Seen",))
    store.append("INBOX", raw("hello"))

    counts = {folder.name: (folder.total, folder.unseen) for folder in store.folders()}

    assert counts["Reçus 2026"] == (3, 3)
    assert counts["Projects/Été"] == (1, 0)
    assert counts["12"] == (0, 0)
    assert counts["INBOX"] == (1, 1)


@pytest.mark.parametrize("name", ["", "  ", "INBOX", "inbox", "Sent", "Trash", "a*b", "a%b", "/lead", "trail/",
                                  "a//b", "line\nbreak", 'quo"te', "x" * 201])
def test_folder_names_that_cannot_be_created(store, name):
    with pytest.raises(StoreError):
        store.create_folder(name)


def test_default_folders_cannot_be_renamed_or_deleted_and_names_do_not_collide(store):
    store.create_folder("Receipts")
    with pytest.raises(StoreError):
        store.rename_folder("Sent", "Outgoing")
    with pytest.raises(StoreError):
        store.delete_folder("INBOX")
    with pytest.raises(StoreError, match="exists"):
        store.create_folder("Receipts")
    store.create_folder("Bills")
    with pytest.raises(StoreError, match="exists"):
        store.rename_folder("Receipts", "Bills")
    with pytest.raises(StoreError, match="every mailbox has"):
        store.rename_folder("Receipts", "Archive")
    with pytest.raises(FolderNotFound):
        store.delete_folder("Nowhere")


def test_many_messages_are_flagged_moved_and_deleted_at_once(store):
    first, second, third = (store.append("INBOX", raw(name)) for name in ("one", "two", "three"))

    store.set_flags_many("INBOX", [first, second, 99999], seen=True, starred=True, add_keywords=("$label7",))
    flagged = {m.subject: (m.seen, m.starred, m.keywords) for m in store.list("INBOX").messages}
    assert flagged == {"one": (True, True, ("$label7",)), "two": (True, True, ("$label7",)),
                       "three": (False, False, ())}

    store.set_flags_many("INBOX", [first], seen=False, remove_keywords=("$label7",))
    store.move_many("INBOX", [first, third], "Archive")
    assert subjects(store) == ["two"]
    assert sorted(subjects(store, "Archive")) == ["one", "three"]
    assert {m.subject: m.seen for m in store.list("Archive").messages} == {"one": False, "three": False}

    store.delete_many("Archive", store.uids("Archive"))
    assert subjects(store, "Archive") == []


def test_a_conversation_is_found_through_message_id_and_references_in_each_folder(store):
    store.append("INBOX", raw("Plan", message_id="<root@example.test>"))
    store.append("Sent", raw("Re: Plan", message_id="<reply@mailwell.test>", references="<root@example.test>"))
    store.append("INBOX", raw("Re: Plan", message_id="<answer@example.test>",
                              references="<root@example.test> <reply@mailwell.test>"))
    store.append("INBOX", raw("Unrelated", message_id="<other@example.test>"))

    ids = ["<root@example.test>", "<reply@mailwell.test>"]
    inbox = [m.subject for m in store.related("INBOX", ids)]
    sent = [m.subject for m in store.related("Sent", ids)]

    assert inbox == ["Plan", "Re: Plan"]
    assert sent == ["Re: Plan"]
    assert store.related("INBOX", []) == []
