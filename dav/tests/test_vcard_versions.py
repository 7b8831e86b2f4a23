"""vCard 3.0 and 4.0 as CardDAV clients ask for them (RFC 6352 10.4 address-data, Accept on GET):
iOS and macOS read 3.0, webmail and REST write 4.0. The card is stored as written and converted on
the way out; every representation carries the stored card's ETag, so a sync client that compares
ETags from PROPFIND, REPORT and GET sees one resource."""
import base64

import pytest
import vobject

from dav.tests.davhttp import BOOK, error_conditions, multistatus, props_body, propfind, report, vcard
from contacts.models import Contact
from contacts.services import address_book_for, contact_create

pytestmark = pytest.mark.django_db(transaction=True)
PHOTO = base64.b64encode(bytes(range(256)) * 2).decode()
RICH_4 = "\r\n".join([
    "BEGIN:VCARD", "VERSION:4.0", "UID:urn:uuid:rich-1", "KIND:individual", "FN:Rosa Parks", "N:Parks;Rosa;;;",
    "EMAIL;TYPE=work;PREF=1:rosa@example.org", "EMAIL;TYPE=home:rosa@home.example",
    "TEL;VALUE=uri;TYPE=cell,voice:tel:+1-555-0100",
    "ADR;TYPE=home:;;12 Cleveland Ave;Montgomery;AL;36104;USA", "ORG:NAACP;Montgomery", "BDAY:--0204",
    "NOTE:Line one\\nLine two\\, with a comma", f"PHOTO:data:image/jpeg;base64,{PHOTO}", "END:VCARD", ""])
GROUP_4 = "\r\n".join(["BEGIN:VCARD", "VERSION:4.0", "UID:group-1", "KIND:group", "FN:Board",
                       "MEMBER:urn:uuid:rich-1", "END:VCARD", ""])


def put(http, name: str, text: str):
    answer = http.put(BOOK + name, content=text, headers={"Content-Type": "text/vcard; charset=utf-8"})
    assert answer.status_code == 201, answer.text
    return answer


def address_data(version: str | None) -> str:
    attributes = ' content-type="text/vcard"' + (f' version="{version}"' if version else "")
    return f"<card:address-data{attributes}/>"


def multiget(http, version: str | None, *names: str):
    body = props_body("d:getetag", root="card:addressbook-multiget",
                      inner="".join(f"<d:href>{BOOK}{name}</d:href>" for name in names))
    body = body.replace("<d:getetag/>", "<d:getetag/>" + address_data(version))
    return multistatus(report(http, BOOK, body))


def test_a_contact_made_in_webmail_reaches_an_ios_client_as_vcard_3(http, ann):
    contact = contact_create(book=address_book_for(account=ann.account, mailbox=ann), name="Ann Lee",
                             email="ann.lee@example.org", phone="+44 20 7946 0000", company="Lee & Co")

    answer = multiget(http, "3.0", contact.href)[0]

    card = vobject.readOne(answer.text("card:address-data"))
    assert contact.vcard.startswith("BEGIN:VCARD\r\nVERSION:4.0")
    assert card.version.value == "3.0"
    assert (card.fn.value, card.email.value, card.tel.value, card.org.value) == (
        "Ann Lee", "ann.lee@example.org", "+44 20 7946 0000", ["Lee & Co"])
    assert (card.n.value.family, card.n.value.given) == ("Lee", "Ann")
    assert answer.text("d:getetag") == f'"{contact.etag}"'


def test_every_property_we_write_converts_to_3_0_and_what_ios_saves_back_reads_as_the_same_4_0(http):
    put(http, "rich.vcf", RICH_4)
    put(http, "group.vcf", GROUP_4)

    as_3 = {answer.href: answer.text("card:address-data") for answer in multiget(http, "3.0", "rich.vcf", "group.vcf")}
    rich, group = vobject.readOne(as_3[BOOK + "rich.vcf"]), vobject.readOne(as_3[BOOK + "group.vcf"])
    put(http, "saved-by-ios.vcf", as_3[BOOK + "rich.vcf"].replace("\n", "\r\n").replace("rich-1", "rich-2"))
    returned = multiget(http, "4.0", "saved-by-ios.vcf")[0].text("card:address-data")

    assert rich.version.value == "3.0" and "kind" not in rich.contents
    emails = {prop.value: sorted(t.lower() for t in prop.params.get("TYPE", [])) for prop in rich.contents["email"]}
    assert emails == {"rosa@example.org": ["pref", "work"], "rosa@home.example": ["home"]}
    assert rich.tel.value == "+1-555-0100" and sorted(t.lower() for t in rich.tel.params["TYPE"]) == ["cell", "voice"]
    assert rich.adr.value.street == "12 Cleveland Ave" and rich.adr.value.code == "36104"
    assert rich.bday.value == "1604-02-04" and rich.bday.params["X-APPLE-OMIT-YEAR"] == ["1604"]
    assert rich.note.value == "Line one\nLine two, with a comma"
    assert rich.photo.value == bytes(range(256)) * 2 and rich.photo.params["TYPE"] == ["JPEG"]
    assert group.contents["x-addressbookserver-kind"][0].value == "group"
    assert group.contents["x-addressbookserver-member"][0].value == "urn:uuid:rich-1"
    for line in ("VERSION:4.0", "BDAY:--0204", "TEL;TYPE=cell,voice:+1-555-0100",
                 "ADR;TYPE=home:;;12 Cleveland Ave;Montgomery;AL;36104;USA"):
        assert line in returned
    assert "EMAIL;PREF=1;TYPE=work:rosa@example.org" in returned
    assert f"PHOTO:data:image/jpeg;base64,{PHOTO}" in returned.replace("\n ", "")


def test_a_3_0_card_put_by_a_3_0_client_reads_back_exactly_as_sent(http, ann):
    jane = vcard("jane-1", "Jane Doe", "jane@example.org")
    created = put(http, "jane.vcf", jane)

    as_3, plain = multiget(http, "3.0", "jane.vcf")[0], multiget(http, None, "jane.vcf")[0]
    got = http.get(BOOK + "jane.vcf", headers={"Accept": "text/vcard; version=3.0"})

    assert as_3.text("card:address-data") == plain.text("card:address-data") == jane.strip().replace("\r\n", "\n")
    assert got.text == jane and got.headers["ETag"] == created.headers["ETag"]
    assert Contact.objects.get(uid="jane-1").vcard == jane


def test_get_converts_for_the_version_the_accept_header_names_and_keeps_the_etag(http, ann):
    put(http, "rich.vcf", RICH_4)
    etag = multistatus(propfind(http, BOOK + "rich.vcf", "d:getetag"))[0].text("d:getetag")

    stored = http.get(BOOK + "rich.vcf")
    as_3 = http.get(BOOK + "rich.vcf", headers={"Accept": "text/vcard;version=4.0;q=0.5, text/vcard;version=3.0"})
    unchanged = http.get(BOOK + "rich.vcf", headers={"Accept": "text/vcard; version=3.0", "If-None-Match": etag})

    assert stored.text == RICH_4
    assert vobject.readOne(as_3.text).version.value == "3.0"
    assert int(as_3.headers["Content-Length"]) == len(as_3.content)
    assert stored.headers["ETag"] == as_3.headers["ETag"] == etag
    assert unchanged.status_code == 304


def test_an_addressbook_query_converts_what_it_finds(http):
    put(http, "rich.vcf", RICH_4)
    body = props_body("d:getetag", root="card:addressbook-query", inner=(
        '<card:filter><card:prop-filter name="FN"><card:text-match>rosa</card:text-match>'
        "</card:prop-filter></card:filter>")).replace("<d:getetag/>", "<d:getetag/>" + address_data("3.0"))

    answers = multistatus(report(http, BOOK, body))

    assert [vobject.readOne(answer.text("card:address-data")).version.value for answer in answers] == ["3.0"]


def test_a_version_we_cannot_make_is_refused_with_the_conversion_precondition(http):
    put(http, "rich.vcf", RICH_4)
    body = props_body("d:getetag", root="card:addressbook-multiget", inner=f"<d:href>{BOOK}rich.vcf</d:href>")

    old = report(http, BOOK, body.replace("<d:getetag/>", "<d:getetag/>" + address_data("2.1")))
    json = report(http, BOOK, body.replace("<d:getetag/>", '<d:getetag/><card:address-data '
                                           'content-type="application/vcard+json"/>'))

    assert old.status_code == json.status_code == 403
    assert error_conditions(old) == error_conditions(json) == ["card:supported-address-data-conversion"]
