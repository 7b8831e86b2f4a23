"""The list's FETCH answer is read by the store itself (a regular expression per line instead of
imapclient's character-by-character lexer): every list shows what imapclient's own parse of the same
answer would show, on hard messages from a real Dovecot and on answers crafted to hit each rule; the
labels a list needs cost one query."""
import pytest
from imapclient import IMAPClient
from imapclient.response_parser import parse_fetch_response

from mailcore.inbox.labels import label_create
from mailcore.mailboxes.selectors import labels_for_mailbox
from mailcore.store.factory import store_for
from mailcore.store.imap_pool import managed_mailbox_login
from mailcore.store.imap_wire import SUMMARY_FIELDS, _fetched
from testkit.dovecot import managed_mailbox, message
from testkit.factories import make_mailbox

HARD_MESSAGES = [
    message("=?utf-8?q?Caf=C3=A9_=E2=82=AC?= and \"quotes\" \\ back",
            sender='"Amy \\"A\\" Example" <amy@example.test>'),
    message("Plain", sender="=?iso-8859-1?q?J=F6rg?= <jorg@example.test>, second@example.test"),
    "From: Grüße <gr@example.test>\r\nTo: Undisclosed recipients:;\r\nSubject: Größe ünd Maß\r\n"
    "Date: not a date\r\n\r\nRaw 8-bit headers travel as IMAP literals.\r\n".encode(),
    b"From: nobody\r\nTo: team: a@example.test, b@example.test;\r\n\r\nNo subject, no date.\r\n",
    message("With a file", attachment=True),
    b"From: x@example.test\r\nSubject: Inline image\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related; "
    b'boundary="r"\r\n\r\n--r\r\nContent-Type: text/html\r\n\r\n<img src="cid:i">\r\n--r\r\nContent-Type: image/png; '
    b'name="i.png"\r\nContent-Disposition: inline; filename="i.png"\r\nContent-ID: <i>\r\n'
    b"Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--r--\r\n",
    b"From: y@example.test\r\nSubject: Forwarded\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
    b'boundary="f"\r\n\r\n--f\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n--f\r\nContent-Type: message/rfc822'
    b"\r\n\r\nFrom: z@example.test\r\nSubject: inner\r\n\r\ninner body\r\n--f--\r\n",
]


@pytest.fixture
def mailbox(plans, imap_settings):
    return managed_mailbox(password="owner password 1")


def imapclient_summaries(settings, store, mailbox, uids) -> list:
    """The same summaries from imapclient's own FETCH and parse."""
    client = IMAPClient(settings.IMAP_HOST, port=settings.IMAP_PORT, ssl=False)
    client.normalise_times = False
    client.login(managed_mailbox_login(mailbox.address), settings.DOVECOT_MASTER_PASSWORD)
    try:
        client.select_folder("INBOX", readonly=True)
        data = client.fetch(uids, SUMMARY_FIELDS)
    finally:
        client.logout()
    return [store._summary(uid, data[uid]) for uid in uids]


def test_a_list_of_hard_messages_reads_as_imapclient_reads_it(mailbox, settings):
    store = store_for(mailbox)
    for flags, raw in zip([("\\Seen",), ("\\Flagged", "$label7"), (), ("\\Seen", "\\Flagged"), (), (), ()],
                          HARD_MESSAGES, strict=True):
        store.append("INBOX", raw, flags=flags)

    by_position = store.list("INBOX").messages  # the default page: FETCH by sequence numbers
    by_subject = store.list("INBOX", sort="subject").messages  # SORT, then UID FETCH
    expected = imapclient_summaries(settings, store, mailbox, [summary.uid for summary in by_position])

    assert by_position == expected
    assert sorted(by_subject, key=lambda summary: summary.uid) == sorted(expected, key=lambda summary: summary.uid)
    assert any(summary.has_attachments for summary in by_position)


RECORDS = [
    (b'12 (UID 7 FLAGS (\\Seen $label3) RFC822.SIZE 1234 INTERNALDATE "01-Jan-2025 10:00:00 +0200" '
     b'ENVELOPE ("Wed, 1 Jan 2025 10:00:00 +0200" {13}', b'Caf\xc3\xa9 "x" \\ )'),
    b' (("A \\"B\\" \\\\ C \\d" NIL "a" "ex.com")) NIL NIL ((NIL NIL "grp" NIL)("x" NIL "b" "ex.com")'
    b'(NIL NIL NIL NIL)) NIL NIL NIL "<id@x>") BODYSTRUCTURE (("text" "plain" ("charset" "utf-8") NIL NIL "7bit" '
    b'10 1 NIL NIL NIL NIL)("application" "pdf" ("name" "r.pdf") NIL NIL "base64" 300 NIL ("attachment" '
    b'("filename" "r.pdf")) NIL NIL) "mixed" ("boundary" "b1") NIL NIL NIL))',
    b"13 (UID 8 FLAGS () RFC822.SIZE 0 INTERNALDATE \"01-Jan-2025 10:00:00 +0000\" ENVELOPE (NIL \"\" NIL NIL NIL "
    b"NIL NIL NIL NIL NIL) BODYSTRUCTURE (\"text\" \"plain\" NIL NIL NIL \"7bit\" 0 0 NIL NIL NIL NIL))",
    b"13 (FLAGS (\\Flagged))",  # unsolicited: merged as imapclient merges it
    b"14 (UID 09 FLAGS (\\Recent) RFC822.SIZE 5 INTERNALDATE \"bogus\" ENVELOPE (\"not a date\" NIL NIL NIL NIL "
    b"NIL NIL NIL NIL NIL) BODY[HEADER.FIELDS (X)] NIL BODYSTRUCTURE (\"text\" \"plain\" NIL NIL NIL \"7bit\" 0 0 "
    b"NIL NIL NIL NIL))",
]


@pytest.mark.parametrize("records", [RECORDS, [b"15 (UID 10 FLAGS (%odd))"], [b'16 (UID 11 X "unclosed)'],
                                     [b"17 (UID 12 FLAGS (\\Seen)))"], [b"18 (UID 13 X a[b)"],
                                     [b"19 (UID 14 X [a] Y b[c]d[e])"], [b'20 (UID 15 X "" Y "\\\\")']])
def test_crafted_answers_read_as_imapclient_reads_them(records):
    """Quoted strings with escapes, literals, NIL, numbers with a leading zero, sections, a lone [, a
    parenthesis too many, bad dates, unsolicited FETCH lines; what the fast reader does not handle
    goes to imapclient's parser."""
    for by_uid in (False, True):
        try:
            expected = parse_fetch_response(records, False, by_uid)
        except Exception as exc:  # noqa: BLE001 - the same error must come out
            with pytest.raises(type(exc)):
                _fetched(records, by_uid=by_uid)
            continue
        found = _fetched(records, by_uid=by_uid)
        assert set(found) == set(expected)
        for key, items in expected.items():
            items.pop(b"SEQ", None)
            ours = {name: value for name, value in found[key].items() if name != b"SEQ"}
            if by_uid:
                ours.pop(b"UID", None)
            assert ours == items
    if records is RECORDS:
        assert all(b"SEQ" not in items for items in _fetched(records, by_uid=False).values())  # not imapclient's


@pytest.mark.django_db
def test_the_labels_a_list_needs_cost_one_query(django_assert_num_queries, alice):
    from mailcore.partners.services import hosting_partner_enable

    mailbox = make_mailbox(alice.account, "one@labels.test")
    account_wide = label_create(account=alice.account, name="Account", color="#112233")
    own = label_create(account=alice.account, mailbox=mailbox, name="Own", color="#445566")

    with django_assert_num_queries(1):
        assert list(labels_for_mailbox(mailbox=mailbox)) == [account_wide, own]
    hosting_partner_enable(account=alice.account, status="active")
    with django_assert_num_queries(1):  # a partner's account-wide labels are not its customers'
        assert list(labels_for_mailbox(mailbox=mailbox)) == [own]
