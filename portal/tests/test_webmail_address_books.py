"""Several address books in the webmail: a book made, renamed, recoloured and deleted after a
confirmation (the default refused, and the page says so); a contact made in the chosen book, moved
by changing it on edit; the list marking each contact's book and filtered by ?book=; another
mailbox's book 404; bad input shown and nothing saved. That a sync client sees a book made here is
dav/tests/test_dav_collections.py's."""
import html
import re

import pytest

from contacts.models import AddressBook, Contact
from contacts.services import address_book_create, address_book_for, contact_create, group_create
from portal.tests.conftest import WEBMAIL_PASSWORD
from testkit.factories import make_mailbox

pytestmark = [pytest.mark.django_db, pytest.mark.parametrize("webmail_owner", ["embedded"], indirect=True)]
BOOKS = "/webmail/contacts/books/"


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


@pytest.fixture
def owner(client, webmail_owner):
    assert client.post("/webmail/", {"address": webmail_owner.address,
                                     "password": WEBMAIL_PASSWORD}).status_code == 302
    return client


@pytest.fixture
def default(webmail_owner):
    return address_book_for(account=webmail_owner.account, mailbox=webmail_owner)


def contact_form(**fields) -> dict:
    return {"name": "Ann Lee", "email": "ann@lee.test", "phone": "", "company": "", "notes": "", "new_group": "",
            **fields}


def test_a_book_is_made_renamed_recoloured_and_deleted_and_the_default_stays(owner, webmail_owner, default):
    made = owner.post(BOOKS, {"name": "Work", "color": "#DB2777"})

    assert made.status_code == 302
    work = AddressBook.objects.get(mailbox=webmail_owner, name="Work")
    assert (work.color, work.is_default, work.account_id) == ("#db2777", False, webmail_owner.account_id)
    listing = owner.get(BOOKS)
    page = listing.content.decode()
    assert "“Work” added." in text(listing)
    assert 'value="#db2777"' in page and f'href="/webmail/contacts/books/{work.pk}/delete/"' in page
    assert "The default book cannot be deleted." in text(owner.get(BOOKS))
    assert f'/webmail/contacts/books/{default.pk}/delete/' not in page

    owner.post(f"{BOOKS}{work.pk}/", {"name": "Office", "color": "#16a34a"})
    work.refresh_from_db()
    assert (work.name, work.color) == ("Office", "#16a34a")

    contact_create(book=work, name="Boss", email="boss@office.test")
    confirm = text(owner.get(f"{BOOKS}{work.pk}/delete/"))
    assert "Delete the address book “Office”?" in confirm and "It holds 1 contact." in confirm
    assert AddressBook.objects.filter(pk=work.pk).exists()  # asking deletes nothing
    gone = owner.post(f"{BOOKS}{work.pk}/delete/", follow=True)
    assert "“Office” and the contacts in it deleted." in text(gone)
    assert not Contact.objects.filter(name="Boss").exists()

    refused = owner.post(f"{BOOKS}{default.pk}/delete/", follow=True)
    assert "The default address book cannot be deleted" in text(refused)
    assert "cannot be deleted" in text(owner.get(f"{BOOKS}{default.pk}/delete/"))
    assert list(AddressBook.objects.filter(mailbox=webmail_owner).values_list("name", flat=True)) == ["Contacts"]


def test_a_bad_book_is_shown_and_nothing_changes(owner, webmail_owner, default):
    response = owner.post(BOOKS, {"name": "", "color": "blue"})

    assert response.status_code == 400
    page = text(response)
    assert "A colour is # and six hex digits" in page and "This field is required." in page
    assert AddressBook.objects.filter(mailbox=webmail_owner).count() == 1

    renamed = owner.post(f"{BOOKS}{default.pk}/", {"name": " ", "color": "#12345"}, follow=True)
    assert "A colour is # and six hex digits" in text(renamed)
    default.refresh_from_db()
    assert (default.name, default.color) == ("Contacts", "#2563eb")


def test_a_contact_goes_in_the_chosen_book_moves_on_edit_and_the_list_shows_and_filters_by_book(
        owner, webmail_owner, default):
    family = address_book_create(account=webmail_owner.account, mailbox=webmail_owner, name="Family",
                                 color="#ea580c")
    form_page = owner.get("/webmail/contacts/new/").content.decode()
    choices = re.search(r'<select name="book"[^>]*>(.*?)</select>', form_page, re.S).group(1)
    assert re.findall(r"<option[^>]*>([^<]+)</option>", choices) == ["Contacts", "Family"]
    assert re.search(rf'<option value="{default.pk}"[^>]*selected', choices)
    from_book = owner.get(f"/webmail/contacts/new/?book={family.pk}").content.decode()
    assert re.search(rf'<option value="{family.pk}"[^>]*selected', from_book)

    made = owner.post("/webmail/contacts/new/", contact_form(book=str(family.pk), new_group="Cousins"))
    assert made.status_code == 302
    ann = Contact.objects.get(name="Ann Lee")
    assert (ann.book_id, [g.name for g in ann.groups.all()]) == (family.pk, ["Cousins"])
    assert "Ann Lee added to Family." in text(owner.get(made["Location"]))
    contact_create(book=default, name="Zed Work", email="zed@work.test")

    listed = owner.get("/webmail/contacts/").content.decode()
    assert "In </span>Family" in listed and "In </span>Contacts" in listed
    only_family = owner.get(f"/webmail/contacts/?book={family.pk}")
    names = re.findall(r'<td class="contact-row__name">\s*<a [^>]*>([^<]+)</a>', only_family.content.decode())
    assert names == ["Ann Lee"]
    assert f'name="book" value="{family.pk}"' in only_family.content.decode()  # the search keeps the book
    assert "Family" in text(only_family).split("Search")[0]
    searched = owner.get(f"/webmail/contacts/?book={default.pk}&q=ann")
    assert "0 contacts match “ann” in Contacts." in text(searched)

    moved = owner.post(f"/webmail/contacts/{ann.pk}/edit/", contact_form(book=str(default.pk), groups=["Cousins"]))
    assert moved.status_code == 302
    ann.refresh_from_db()
    assert ann.book_id == default.pk and [g.name for g in ann.groups.all()] == ["Cousins"]
    assert ann.groups.get().book_id == default.pk
    assert not family.contacts.exists()
    assert family.changes.filter(href=ann.href, deleted=True).exists()  # phones drop it from Family

    edit_page = owner.get(f"/webmail/contacts/{ann.pk}/edit/").content.decode()
    assert re.search(rf'<option value="{default.pk}"[^>]*selected', edit_page)


def test_the_book_select_refuses_a_book_not_of_this_mailbox(owner, webmail_owner, alice, default):
    other = make_mailbox(alice.account, "bea@example.test")
    bea_book = address_book_create(account=alice.account, mailbox=other, name="Bea's")
    ann = contact_create(book=default, name="Ann Lee")

    new = owner.post("/webmail/contacts/new/", contact_form(name="Nope", book=str(bea_book.pk)))
    edited = owner.post(f"/webmail/contacts/{ann.pk}/edit/", contact_form(book=str(bea_book.pk)))

    assert (new.status_code, edited.status_code) == (400, 400)
    assert "Select a valid choice." in text(new)
    assert not bea_book.contacts.exists() and Contact.objects.get(pk=ann.pk).book_id == default.pk


def test_another_mailboxs_book_is_404_everywhere(owner, webmail_owner, alice, charlie, default):
    bea = make_mailbox(alice.account, "bea@example.test")
    carl = make_mailbox(charlie.account, "carl@charlie.test")
    theirs = [address_book_create(account=alice.account, mailbox=bea, name="Bea's"),
              address_book_create(account=charlie.account, mailbox=carl, name="Carl's")]

    for book in theirs:
        assert owner.get(f"/webmail/contacts/?book={book.pk}").status_code == 404
        assert owner.get(f"/webmail/contacts/export/?book={book.pk}").status_code == 404
        assert owner.post(f"{BOOKS}{book.pk}/", {"name": "Mine", "color": "#000000"}).status_code == 404
        assert owner.get(f"{BOOKS}{book.pk}/delete/").status_code == 404
        assert owner.post(f"{BOOKS}{book.pk}/delete/").status_code == 404
    assert sorted(AddressBook.objects.filter(pk__in=[b.pk for b in theirs]).values_list("name", flat=True)) == [
        "Bea's", "Carl's"]


def test_the_export_of_one_book_holds_only_its_contacts(owner, webmail_owner, default):
    work = address_book_create(account=webmail_owner.account, mailbox=webmail_owner, name="Work")
    contact_create(book=work, name="Boss", email="boss@office.test")
    contact_create(book=default, name="Mum", email="mum@home.test")

    response = owner.get(f"/webmail/contacts/export/?book={work.pk}")

    assert response["Content-Disposition"] == 'attachment; filename="contacts-work.vcf"'
    body = response.content.decode()
    assert "FN:Boss" in body and "Mum" not in body


def test_the_sidebar_lists_the_books_in_their_colours_only_when_there_are_several(owner, webmail_owner, default):
    contact_create(book=default, name="Mum")
    assert "Address book </span>" not in owner.get("/webmail/contacts/").content.decode()
    group_create(book=default, name="Friends")
    work = address_book_create(account=webmail_owner.account, mailbox=webmail_owner, name="Work", color="#9333ea")

    page = owner.get(f"/webmail/contacts/?book={work.pk}").content.decode()

    assert f'href="/webmail/contacts/?book={work.pk}" aria-current="page"' in page
    assert "--book-color: #9333ea" in page
    assert 'href="/webmail/contacts/books/"' in page
