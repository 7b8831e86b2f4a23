"""CardDAV over raw HTTP against the running server, as DAVx5 and Apple Contacts speak it: discovery
from the principal, vCards put with preconditions, read back with their ETag, found by multiget and
by query, followed by sync-collection (seeing the changes made through the services too), deleted."""
import pytest

from dav.tests.davhttp import BOOK, error_conditions, multistatus, props_body, propfind, report, sync_token_of, vcard
from contacts.models import Contact
from contacts.services import address_book_for, contact_create, contact_delete, contact_update

pytestmark = pytest.mark.django_db(transaction=True)
JANE = vcard("jane-1", "Jane Doe", "jane@example.org")
JOHN = vcard("john-1", "John Smith", "john@example.org", version="4.0")


def put(http, name: str, text: str, **headers):
    return http.put(BOOK + name, content=text, headers={"Content-Type": "text/vcard; charset=utf-8", **headers})


def test_the_principal_leads_a_client_to_the_mailboxs_address_book(http):
    root = multistatus(propfind(http, "/dav/", "d:current-user-principal"))
    principal = root[0].hrefs("d:current-user-principal")[0]
    home = multistatus(propfind(http, principal, "card:addressbook-home-set", "d:displayname"))[0]
    listing = multistatus(propfind(http, home.hrefs("card:addressbook-home-set")[0], "d:resourcetype",
                                   "d:displayname", "cs:getctag", "d:sync-token", "card:supported-address-data",
                                   depth="1"))

    assert principal == "/dav/principals/ann@example.test/"
    assert home.text("d:displayname") == "Ann Example"
    assert [answer.href for answer in listing] == ["/dav/addressbooks/ann@example.test/", BOOK]
    book = listing[1]
    assert sorted(child.tag for child in book.props["d:resourcetype"]) == [
        "{DAV:}collection", "{urn:ietf:params:xml:ns:carddav}addressbook"]
    assert book.text("d:displayname") == "Contacts"
    assert book.text("cs:getctag") == "0"
    assert book.text("d:sync-token").endswith("-0")


def test_a_vcard_put_is_created_once_and_read_back_as_sent_with_its_etag(http, ann):
    created = put(http, "jane.vcf", JANE, **{"If-None-Match": "*"})
    again = put(http, "jane.vcf", JANE, **{"If-None-Match": "*"})
    got = http.get(BOOK + "jane.vcf")

    contact = Contact.objects.get(book__mailbox=ann)
    assert created.status_code == 201
    assert created.headers["ETag"] == f'"{contact.etag}"'
    assert again.status_code == 412
    assert (contact.href, contact.name, contact.email) == ("jane.vcf", "Jane Doe", "jane@example.org")
    assert got.status_code == 200
    assert got.headers["Content-Type"] == "text/vcard; charset=utf-8"
    assert got.headers["ETag"] == f'"{contact.etag}"'
    assert got.text == JANE
    assert http.get(BOOK + "jane.vcf", headers={"If-None-Match": got.headers["ETag"]}).status_code == 304
    head = http.head(BOOK + "jane.vcf")
    assert (head.status_code, head.headers["ETag"], head.content) == (200, got.headers["ETag"], b"")


def test_an_update_needs_the_current_etag_and_a_stale_one_changes_nothing(http, ann):
    etag = put(http, "jane.vcf", JANE).headers["ETag"]

    updated = put(http, "jane.vcf", JANE.replace("Jane Doe", "Jane Roe"), **{"If-Match": etag})
    stale = put(http, "jane.vcf", JANE.replace("Jane Doe", "Jane Stale"), **{"If-Match": etag})

    assert updated.status_code == 204
    assert updated.headers["ETag"] != etag
    assert stale.status_code == 412
    assert Contact.objects.get(book__mailbox=ann).name == "Jane Roe"


def test_a_contact_edited_in_webmail_or_rest_reads_back_with_a_new_etag(http, ann):
    etag = put(http, "jane.vcf", JANE).headers["ETag"]

    contact_update(contact=Contact.objects.get(book__mailbox=ann), company="Acme")
    got = http.get(BOOK + "jane.vcf")

    assert got.headers["ETag"] != etag
    assert "ORG:Acme" in got.text and "UID:jane-1" in got.text
    assert put(http, "jane.vcf", JANE, **{"If-Match": etag}).status_code == 412


def test_addressbook_multiget_returns_the_asked_cards_and_404_for_unknown_ones(http):
    put(http, "jane.vcf", JANE)
    put(http, "john.vcf", JOHN)
    body = props_body("d:getetag", "card:address-data", root="card:addressbook-multiget",
                      inner=f"<d:href>{BOOK}john.vcf</d:href><d:href>{BOOK}nobody.vcf</d:href>")

    answers = multistatus(report(http, BOOK, body))

    assert [(answer.href, answer.status) for answer in answers] == [
        (f"{BOOK}john.vcf", None), (f"{BOOK}nobody.vcf", "HTTP/1.1 404 Not Found")]
    assert answers[0].text("card:address-data") == JOHN.strip().replace("\r\n", "\n")  # XML parsers normalise CRLF
    assert answers[0].text("d:getetag") == http.get(BOOK + "john.vcf").headers["ETag"]


@pytest.mark.parametrize(("prop_filter", "expected"), [
    ('<card:prop-filter name="FN"><card:text-match match-type="contains">smi</card:text-match></card:prop-filter>',
     ["john.vcf"]),
    ('<card:prop-filter name="EMAIL"><card:text-match match-type="equals">JANE@example.org</card:text-match>'
     '</card:prop-filter>', ["jane.vcf"]),
    ('<card:prop-filter name="EMAIL"><card:text-match match-type="starts-with">zed</card:text-match>'
     '</card:prop-filter>', []),
    ("", ["jane.vcf", "john.vcf"]),
])
def test_addressbook_query_filters_on_name_and_email(http, prop_filter, expected):
    put(http, "jane.vcf", JANE)
    put(http, "john.vcf", JOHN)
    body = props_body("d:getetag", root="card:addressbook-query",
                      inner=f"<card:filter>{prop_filter}</card:filter>" if prop_filter else "")

    answers = multistatus(report(http, BOOK, body))

    assert [answer.href.rsplit("/", 1)[1] for answer in answers] == expected


def test_sync_collection_lists_everything_first_then_only_the_changes_of_every_path(http, ann):
    put(http, "jane.vcf", JANE)
    initial = report(http, BOOK, props_body("d:getetag", root="d:sync-collection", inner="<d:sync-token/>"))
    assert [answer.href for answer in multistatus(initial)] == [f"{BOOK}jane.vcf"]
    token = sync_token_of(initial)

    book = address_book_for(account=ann.account, mailbox=ann)
    made = contact_create(book=book, name="Made In Webmail", email="web@example.org")
    contact_delete(contact=Contact.objects.get(href="jane.vcf"))
    changes = report(http, BOOK, props_body("d:getetag", root="d:sync-collection",
                                            inner=f"<d:sync-token>{token}</d:sync-token>"))

    answers = multistatus(changes)
    assert [(answer.href, answer.status) for answer in answers] == [
        (f"{BOOK}{made.href}", None), (f"{BOOK}jane.vcf", "HTTP/1.1 404 Not Found")]
    assert answers[0].text("d:getetag") == f'"{made.etag}"'
    new_token = sync_token_of(changes)
    assert new_token != token
    quiet = report(http, BOOK, props_body("d:getetag", root="d:sync-collection",
                                          inner=f"<d:sync-token>{new_token}</d:sync-token>"))
    assert multistatus(quiet) == [] and sync_token_of(quiet) == new_token


@pytest.mark.parametrize("token", ["garbage", "https://elsewhere.test/ns/sync/b999-1", "https://x/ns/sync/b{pk}-99"])
def test_an_unknown_sync_token_is_refused_with_the_valid_sync_token_precondition(http, ann, token):
    book = address_book_for(account=ann.account, mailbox=ann)

    response = report(http, BOOK, props_body("d:getetag", root="d:sync-collection",
                                             inner=f"<d:sync-token>{token.format(pk=book.pk)}</d:sync-token>"))

    assert response.status_code == 403
    assert error_conditions(response) == ["d:valid-sync-token"]


def test_delete_with_a_stale_etag_changes_nothing_and_with_the_current_one_deletes(http, ann):
    etag = put(http, "jane.vcf", JANE).headers["ETag"]
    put(http, "jane.vcf", JANE.replace("Jane Doe", "Jane Roe"))

    stale = http.delete(BOOK + "jane.vcf", headers={"If-Match": etag})
    assert stale.status_code == 412
    assert Contact.objects.filter(book__mailbox=ann).count() == 1

    current = http.get(BOOK + "jane.vcf").headers["ETag"]
    deleted = http.delete(BOOK + "jane.vcf", headers={"If-Match": current})
    assert deleted.status_code == 204
    assert not Contact.objects.filter(book__mailbox=ann).exists()
    assert http.get(BOOK + "jane.vcf").status_code == 404
    assert http.delete(BOOK + "jane.vcf").status_code == 404


def test_a_broken_vcard_is_refused_with_the_valid_address_data_precondition(http, ann):
    response = put(http, "broken.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:No Uid\r\nEND:VCARD\r\n")

    assert response.status_code == 400
    assert error_conditions(response) == ["card:valid-address-data"]
    assert not Contact.objects.filter(book__mailbox=ann).exists()


def test_a_second_resource_with_a_uid_already_in_the_book_is_a_uid_conflict(http, ann):
    put(http, "jane.vcf", JANE)

    response = put(http, "jane-again.vcf", JANE)

    assert response.status_code == 409
    assert error_conditions(response) == ["card:no-uid-conflict"]
    assert list(Contact.objects.filter(book__mailbox=ann).values_list("href", flat=True)) == ["jane.vcf"]


def test_get_on_the_address_book_exports_every_card(http):
    put(http, "jane.vcf", JANE)
    put(http, "john.vcf", JOHN)

    response = http.get(BOOK)

    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == 'attachment; filename="contacts.vcf"'
    assert response.text == JANE + JOHN
