"""The owner's contacts in the webmail: the list (sorted, searched, filtered by group, paged), a
contact's page, new/edit/delete (the stored vCard and the book's sync revision follow), groups,
vCard import and export, the plan gate, another mailbox's contacts (404), CSRF, and contacts as the
first compose suggestions. Contacts live in the database, not the mail store, so these run on the
embedded store only (the store-dependent half of the suggestions is covered in test_webmail_compose)."""
import html
import re

import pytest
import vobject
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from mailcore.accounts.models import Plan
from contacts.models import AddressBook, Contact, ContactGroup
from contacts.services import (
    address_book_for,
    contact_create,
    contact_put,
    contact_update,
    group_create,
)
from portal.tests.conftest import WEBMAIL_PASSWORD
from testkit.factories import make_mailbox

pytestmark = [pytest.mark.django_db, pytest.mark.parametrize("webmail_owner", ["embedded"], indirect=True)]
LIST = "/webmail/contacts/"

CARDS = (
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:phone-1\r\nFN:Grace Hopper\r\nN:Hopper;Grace;;;\r\n"
    "EMAIL;TYPE=INTERNET:grace@navy.test\r\nTEL;TYPE=CELL:+1 555 0100\r\nORG:US Navy\r\nCATEGORIES:Navy\r\n"
    "END:VCARD\r\n"
    "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:phone-2\r\nFN:Alan Turing\r\nEMAIL:alan@bletchley.test\r\nEND:VCARD\r\n"
    "BEGIN:VCARD\r\nVERSION:3.0\r\nTEL:+44 1234\r\nEND:VCARD\r\n"  # neither a name nor an address
)


@pytest.fixture
def owner(webmail_owner):
    return webmail_owner


@pytest.fixture
def book(owner):
    return address_book_for(account=owner.account, mailbox=owner)


@pytest.fixture
def signed_in(client, owner):
    response = client.post("/webmail/", {"address": owner.address, "password": WEBMAIL_PASSWORD})
    assert response.status_code == 302
    return client


@pytest.fixture
def stranger_contact(alice, charlie):
    """A contact of another mailbox of the same account, and one of another account's mailbox."""
    bea = make_mailbox(alice.account, "bea@example.test")
    carl = make_mailbox(charlie.account, "carl@charlie.test")
    ours = contact_create(book=address_book_for(account=alice.account, mailbox=bea), name="Bea's friend",
                          email="friend@bea.test")
    theirs = contact_create(book=address_book_for(account=charlie.account, mailbox=carl), name="Carl's friend",
                            email="friend@carl.test")
    return ours, theirs


def text(response) -> str:
    """The page's words, tags removed and spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def names_listed(response) -> list[str]:
    return [html.unescape(name) for name in
            re.findall(r'<td class="contact-row__name">\s*<a href="[^"]+">([^<]+)</a>', response.content.decode())]


def card_of(contact: Contact):
    contact.refresh_from_db()
    return vobject.readOne(contact.vcard)


def new_contact(**fields) -> dict:
    return {"name": "Ada Lovelace", "email": "ada@engine.test", "phone": "+44 20 7946 0958",
            "company": "Analytical Engines", "notes": "Met at the Royal Society.", **fields}


def revision(book: AddressBook) -> int:
    return AddressBook.objects.get(pk=book.pk).revision


# the frame


def test_contacts_send_everyone_else_to_the_sign_in_page(client, owner):
    response = client.get(LIST)

    assert (response.status_code, response["Location"]) == (302, f"/webmail/?next={LIST}")


def test_the_top_bar_links_to_contacts_and_marks_it_current(signed_in):
    response = signed_in.get(LIST)

    assert response.status_code == 200
    assert f'href="{LIST}" aria-current="true">Contacts</a>' in response.content.decode()
    inbox = signed_in.get("/webmail/inbox/").content.decode()
    assert f'href="{LIST}">Contacts</a>' in inbox


def test_an_empty_book_says_how_to_begin(signed_in):
    page = text(signed_in.get(LIST))

    assert "No contacts yet" in page
    assert "Import a vCard file" in page


# the list


def test_the_list_is_sorted_by_name_with_address_phone_company_and_a_write_link(signed_in, book):
    contact_create(book=book, name="Zoe Zed", email="zoe@z.test")
    contact_create(book=book, name="Amy Pond", email="amy@tardis.test", phone="+44 1", company="TARDIS")
    contact_create(book=book, name="Mo Phone", phone="+1 555")

    response = signed_in.get(LIST)

    assert names_listed(response) == ["Amy Pond", "Mo Phone", "Zoe Zed"]
    page = text(response)
    assert "amy@tardis.test Write to Amy Pond +44 1 TARDIS" in page
    assert 'href="/webmail/compose/?to=Amy%20Pond%20%3Camy%40tardis.test%3E"' in response.content.decode()
    compose = signed_in.get("/webmail/compose/?to=Amy%20Pond%20%3Camy%40tardis.test%3E").content.decode()
    assert "Amy Pond &lt;amy@tardis.test&gt;" in compose


def test_search_looks_at_name_address_and_company(signed_in, book):
    contact_create(book=book, name="Amy Pond", email="amy@tardis.test")
    contact_create(book=book, name="Rory Williams", email="rory@nurse.test", company="Leadworth Hospital")
    contact_create(book=book, name="Clara Oswald", email="clara@coal-hill.test")

    assert names_listed(signed_in.get(LIST, {"q": "amy"})) == ["Amy Pond"]
    assert names_listed(signed_in.get(LIST, {"q": "NURSE.test"})) == ["Rory Williams"]
    assert names_listed(signed_in.get(LIST, {"q": "leadworth"})) == ["Rory Williams"]
    nothing = signed_in.get(LIST, {"q": "dalek"})
    assert names_listed(nothing) == []
    assert "0 contacts match “dalek”." in text(nothing)
    assert "No contact matches" in text(nothing)


def test_with_htmx_the_search_answers_only_the_list(signed_in, book):
    contact_create(book=book, name="Amy Pond", email="amy@tardis.test")
    contact_create(book=book, name="Rory Williams", email="rory@nurse.test")

    response = signed_in.get(LIST, {"q": "rory"}, HTTP_HX_REQUEST="true")

    body = response.content.decode()
    assert body.lstrip().startswith('<section id="contact-list"')
    assert names_listed(response) == ["Rory Williams"]
    assert "<html" not in body


def test_a_group_shows_only_its_members_and_is_marked_in_the_sidebar(signed_in, book):
    family = group_create(book=book, name="Family")
    contact_create(book=book, name="Amy Pond", groups=["Family"])
    contact_create(book=book, name="Rory Williams")

    response = signed_in.get(LIST, {"group": family.pk})

    assert names_listed(response) == ["Amy Pond"]
    assert f'href="{LIST}?group={family.pk}" aria-current="page"' in response.content.decode()
    assert "Family 1" in text(response)
    assert signed_in.get(LIST, {"group": 999999}).status_code == 404


def test_the_list_is_paged_fifty_at_a_time(signed_in, book):
    for number in range(55):
        contact_create(book=book, name=f"Person {number:02d}")

    first, second = signed_in.get(LIST), signed_in.get(LIST, {"page": 2})

    assert len(names_listed(first)) == 50
    assert names_listed(second) == [f"Person {number}" for number in range(50, 55)]
    assert "Page 2 of 2" in text(second)
    assert names_listed(signed_in.get(LIST, {"page": "nonsense"}))[0] == "Person 00"


# one contact


def test_a_new_contact_is_stored_as_a_vcard_and_moves_the_books_revision(signed_in, book):
    before = revision(book)

    response = signed_in.post("/webmail/contacts/new/", new_contact(new_group="Scientists"))

    contact = Contact.objects.get(book=book)
    assert response["Location"] == f"/webmail/contacts/{contact.pk}/"
    card = card_of(contact)
    assert (card.fn.value, card.email.value, card.tel.value, card.org.value, card.note.value) == (
        "Ada Lovelace", "ada@engine.test", "+44 20 7946 0958", ["Analytical Engines"], "Met at the Royal Society.")
    assert card.categories.value == ["Scientists"]
    assert revision(book) == before + 1
    page = text(signed_in.get(response["Location"]))
    assert "Ada Lovelace added to your contacts." in page
    assert "Email ada@engine.test Phone +44 20 7946 0958 Company Analytical Engines Groups Scientists" in page


def test_an_edit_changes_the_vcard_keeps_the_rest_and_moves_the_revision(signed_in, book):
    first_card = CARDS.split("END:VCARD\r\n")[0] + "ADR;TYPE=HOME:;;1 Road;Town;;;UK\r\nEND:VCARD\r\n"
    contact, _ = contact_put(book=book, href="phone-1.vcf", text=first_card)
    group_create(book=book, name="Friends")
    etag, before = contact.etag, revision(book)

    form = signed_in.get(f"/webmail/contacts/{contact.pk}/edit/").content.decode()
    response = signed_in.post(f"/webmail/contacts/{contact.pk}/edit/", new_contact(
        name="Grace B. Hopper", email="GRACE@Navy.test", phone="", groups=["Friends", "Navy"]))

    assert 'value="Grace Hopper"' in form and 'value="Navy" id="id_groups_1" checked' in form
    assert response.status_code == 302
    card = card_of(contact)
    assert (card.fn.value, card.email.value, card.org.value) == ("Grace B. Hopper", "grace@navy.test",
                                                                  ["Analytical Engines"])
    assert "tel" not in card.contents
    assert card.adr.value.street == "1 Road"  # what the webmail does not show survives
    assert sorted(card.categories.value) == ["Friends", "Navy"]
    assert contact.etag != etag and revision(book) == before + 1


@pytest.mark.parametrize(("fields", "field", "error"), [
    ({"name": ""}, "name", "This field is required."),
    ({"email": "not-an-address"}, "email", "Enter a valid email address."),
    ({"phone": "call me maybe"}, "phone", "Enter a phone number"),
    ({"name": "Two\nlines"}, "name", "The name must be one line of text."),
])
def test_bad_input_is_shown_next_to_the_field_and_nothing_is_saved(signed_in, book, fields, field, error):
    existing = contact_create(book=book, name="Amy Pond", email="amy@tardis.test")
    before = revision(book)

    created = signed_in.post("/webmail/contacts/new/", new_contact(**fields))
    edited = signed_in.post(f"/webmail/contacts/{existing.pk}/edit/", new_contact(**fields))

    for response in (created, edited):
        assert response.status_code == 400
        assert re.search(rf'id="id_{field}_error"[^>]*>.*{re.escape(html.escape(error, quote=False))}',
                         response.content.decode(), re.S)
    assert list(Contact.objects.filter(book=book).values_list("name", "email")) == [("Amy Pond", "amy@tardis.test")]
    assert revision(book) == before


def test_deleting_asks_first_then_removes_the_contact_for_sync_too(signed_in, book):
    contact = contact_create(book=book, name="Amy Pond", email="amy@tardis.test")

    confirm = signed_in.get(f"/webmail/contacts/{contact.pk}/delete/")
    assert "Delete Amy Pond?" in text(confirm) and Contact.objects.filter(pk=contact.pk).exists()
    response = signed_in.post(f"/webmail/contacts/{contact.pk}/delete/")

    assert response["Location"] == LIST
    assert not Contact.objects.filter(pk=contact.pk).exists()
    assert list(book.changes.values_list("href", "deleted")) == [(contact.href, True)]
    assert "Amy Pond deleted from your contacts." in text(signed_in.get(LIST))


def test_another_mailboxs_contact_is_not_found_and_stays_as_it_was(signed_in, stranger_contact):
    for contact in stranger_contact:
        for url in (f"/webmail/contacts/{contact.pk}/", f"/webmail/contacts/{contact.pk}/edit/",
                    f"/webmail/contacts/{contact.pk}/delete/"):
            assert signed_in.get(url).status_code == 404
        assert signed_in.post(f"/webmail/contacts/{contact.pk}/edit/", new_contact()).status_code == 404
        assert signed_in.post(f"/webmail/contacts/{contact.pk}/delete/").status_code == 404
        unchanged = Contact.objects.get(pk=contact.pk)
        assert (unchanged.name, unchanged.vcard) == (contact.name, contact.vcard)
    assert names_listed(signed_in.get(LIST)) == []


def test_another_mailboxs_group_and_contacts_cannot_be_touched(signed_in, book, alice):
    bea = make_mailbox(alice.account, "bea@example.test")
    theirs = group_create(book=address_book_for(account=alice.account, mailbox=bea), name="Theirs")
    their_contact = contact_create(book=theirs.book, name="Bea's friend")
    mine = group_create(book=book, name="Mine")

    assert signed_in.get(f"/webmail/contacts/groups/{theirs.pk}/").status_code == 404
    assert signed_in.post(f"/webmail/contacts/groups/{theirs.pk}/delete/").status_code == 404
    assert signed_in.get("/webmail/contacts/export/", {"group": theirs.pk}).status_code == 404
    response = signed_in.post("/webmail/contacts/select/", {"action": "add", "group": mine.pk,
                                                             "contacts": [their_contact.pk]})
    assert response.status_code == 404
    assert list(mine.contacts.all()) == [] and ContactGroup.objects.filter(pk=theirs.pk).exists()


def test_a_form_posted_without_the_csrf_token_is_refused(signed_in, book):
    contact = contact_create(book=book, name="Amy Pond")
    guarded = Client(enforce_csrf_checks=True)
    guarded.cookies = signed_in.cookies

    assert guarded.get(LIST).status_code == 200  # the same signed-in session
    assert guarded.post("/webmail/contacts/new/", new_contact()).status_code == 403
    assert guarded.post(f"/webmail/contacts/{contact.pk}/edit/", new_contact()).status_code == 403
    assert guarded.post(f"/webmail/contacts/{contact.pk}/delete/").status_code == 403
    assert guarded.post("/webmail/contacts/import/", {"file": upload(CARDS)}).status_code == 403
    assert list(Contact.objects.filter(book=book).values_list("name", flat=True)) == ["Amy Pond"]


# groups


def test_groups_are_made_renamed_and_deleted_and_the_vcards_follow(signed_in, book):
    made = signed_in.post("/webmail/contacts/groups/", {"name": "Family"})
    group = ContactGroup.objects.get(book=book)
    amy = contact_create(book=book, name="Amy Pond", groups=["Family"])
    twice = signed_in.post("/webmail/contacts/groups/", {"name": "Family"})
    renamed = signed_in.post(f"/webmail/contacts/groups/{group.pk}/", {f"group-{group.pk}-name": "Pond family"})

    assert made["Location"] == "/webmail/contacts/groups/"
    assert twice.status_code == 400 and "There is a group named &#x27;Family&#x27; already." in twice.content.decode()
    assert renamed.status_code == 302
    assert card_of(amy).categories.value == ["Pond family"]
    assert "Pond family 1 contact" in text(signed_in.get("/webmail/contacts/groups/"))

    confirm = signed_in.get(f"/webmail/contacts/groups/{group.pk}/delete/")
    deleted = signed_in.post(f"/webmail/contacts/groups/{group.pk}/delete/")

    assert "Delete the group Pond family?" in text(confirm) and "its 1 contact stays" in text(confirm)
    assert deleted.status_code == 302 and not ContactGroup.objects.filter(pk=group.pk).exists()
    assert "categories" not in card_of(amy).contents
    after = text(signed_in.get(deleted["Location"]))
    assert "Group Pond family deleted; its contacts are still in your contacts." in after


def test_an_empty_group_name_is_refused(signed_in, book):
    response = signed_in.post("/webmail/contacts/groups/", {"name": "   "})

    assert response.status_code == 400 and "This field is required." in text(response)
    assert not ContactGroup.objects.filter(book=book).exists()


def test_ticked_contacts_are_added_to_a_group_and_taken_out_again(signed_in, book):
    family = group_create(book=book, name="Family")
    amy = contact_create(book=book, name="Amy Pond")
    rory = contact_create(book=book, name="Rory Williams")
    contact_create(book=book, name="Clara Oswald")
    back = f"{LIST}?q=o"

    added = signed_in.post("/webmail/contacts/select/", {"action": "add", "group": family.pk,
                                                          "contacts": [amy.pk, rory.pk], "back": back})
    assert added["Location"] == back
    assert sorted(family.contacts.values_list("name", flat=True)) == ["Amy Pond", "Rory Williams"]
    assert card_of(rory).categories.value == ["Family"]
    assert "2 contacts added to Family." in text(signed_in.get(back))

    signed_in.post("/webmail/contacts/select/", {"action": "remove", "group": family.pk, "contacts": [amy.pk],
                                                 "back": "https://elsewhere.test/"})
    assert list(family.contacts.values_list("name", flat=True)) == ["Rory Williams"]

    nothing = signed_in.post("/webmail/contacts/select/", {"action": "add", "group": family.pk})
    assert nothing["Location"] == LIST
    assert "Tick at least one contact." in text(signed_in.get(LIST))


# vCard files


def upload(text_: str, name: str = "contacts.vcf") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text_.encode(), content_type="text/vcard")


def test_an_import_adds_the_cards_and_lists_what_it_skipped(signed_in, book):
    before = revision(book)

    response = signed_in.post("/webmail/contacts/import/", {"file": upload(CARDS)})

    page = text(response)
    assert response.status_code == 200
    assert "2 contacts added, 0 updated, 1 skipped." in page
    assert "Card 3: no name and no email address." in page
    assert names_listed(signed_in.get(LIST)) == ["Alan Turing", "Grace Hopper"]
    grace = Contact.objects.get(book=book, uid="phone-1")
    assert (grace.email, grace.phone, grace.company, [g.name for g in grace.groups.all()]) == (
        "grace@navy.test", "+1 555 0100", "US Navy", ["Navy"])
    assert revision(book) == before + 2

    again = signed_in.post("/webmail/contacts/import/", {"file": upload(CARDS.replace("US Navy", "Navy"))})
    assert "0 contacts added, 2 updated, 1 skipped." in text(again)
    assert Contact.objects.filter(book=book).count() == 2


@pytest.mark.parametrize(("content", "error"), [
    ("this is not a vCard", "Nothing was imported: Not a vCard file"),
    ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n", "Nothing was imported: The file holds no vCards."),
])
def test_a_broken_file_imports_nothing_and_says_why(signed_in, book, content, error):
    response = signed_in.post("/webmail/contacts/import/", {"file": upload(content)})

    assert response.status_code == 400
    assert error in text(response)
    assert not Contact.objects.filter(book=book).exists()


def test_a_file_over_five_megabytes_is_refused(signed_in, book):
    big = CARDS + "NOTE:" + "x" * (5 * 1024 * 1024) + "\r\n"

    response = signed_in.post("/webmail/contacts/import/", {"file": upload(big)})

    assert response.status_code == 400
    assert "The file is 5.0 MB; it may be at most 5 MB." in text(response)
    assert not Contact.objects.filter(book=book).exists()


def test_an_import_without_a_file_says_so(signed_in):
    response = signed_in.post("/webmail/contacts/import/", {})

    assert response.status_code == 400 and "This field is required." in text(response)


def test_export_downloads_every_contact_or_one_group_as_vcards(signed_in, book):
    signed_in.post("/webmail/contacts/import/", {"file": upload(CARDS)})
    contact_create(book=book, name="Ada Lovelace", email="ada@engine.test")
    navy = ContactGroup.objects.get(book=book, name="Navy")

    everyone = signed_in.get("/webmail/contacts/export/")
    group = signed_in.get("/webmail/contacts/export/", {"group": navy.pk})

    assert everyone["Content-Type"] == "text/vcard; charset=utf-8"
    assert everyone["Content-Disposition"] == 'attachment; filename="contacts.vcf"'
    cards = list(vobject.readComponents(everyone.content.decode()))
    assert [(card.fn.value, card.email.value) for card in cards] == [
        ("Ada Lovelace", "ada@engine.test"), ("Alan Turing", "alan@bletchley.test"),
        ("Grace Hopper", "grace@navy.test")]
    assert group["Content-Disposition"] == 'attachment; filename="contacts-navy.vcf"'
    assert [card.fn.value for card in vobject.readComponents(group.content.decode())] == ["Grace Hopper"]


# the plan


def test_a_plan_without_contacts_gets_a_page_that_says_so(signed_in, owner, book):
    contact = contact_create(book=book, name="Amy Pond", email="amy@tardis.test")
    owner.plan = Plan.objects.get(code="free")
    owner.save(update_fields=["plan"])

    for url in (LIST, f"/webmail/contacts/{contact.pk}/", "/webmail/contacts/export/", "/webmail/contacts/import/"):
        response = signed_in.get(url)
        assert response.status_code == 403
        assert "Contacts are not in your plan" in text(response)
        assert "Contacts needs the Pro plan or a higher plan; your plan does not include it." in text(response)
    assert signed_in.post(f"/webmail/contacts/{contact.pk}/delete/").status_code == 403
    assert Contact.objects.filter(pk=contact.pk).exists()
    assert "Amy Pond" not in signed_in.get("/webmail/compose/suggest/", {"q": "amy"}).content.decode()


# compose


def test_compose_suggests_contacts_first_and_sees_a_change_at_once(signed_in, book):
    amy = contact_create(book=book, name="Amy Pond", email="amy@tardis.test")
    contact_create(book=book, name="No Address")

    first = signed_in.get("/webmail/compose/suggest/", {"q": "am"}).content.decode()
    contact_update(contact=amy, name="Amelia Pond")
    renamed = signed_in.get("/webmail/compose/suggest/", {"q": "tardis"}).content.decode()
    form = signed_in.get("/webmail/compose/").content.decode()

    assert first == '<option value="Amy Pond &lt;amy@tardis.test&gt;, "></option>'
    assert renamed == '<option value="Amelia Pond &lt;amy@tardis.test&gt;, "></option>'
    assert '<option value="Amelia Pond &lt;amy@tardis.test&gt;"></option>' in form
    assert "No Address" not in form
