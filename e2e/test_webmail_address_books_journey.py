"""A mailbox owner makes a second address book ("Work", purple) on the Address books page, adds a
contact to it (the contact form asks which book), sees each contact marked with its book in the
list, opens the Work book from the sidebar, moves the contact back to the default book by editing
it, renames the book, is told the default book cannot be deleted and deletes Work after confirming.
Every page at desktop and phone width: e2e/screenshots/webmail-address-books-*.png."""
import pytest
from playwright.sync_api import expect

from contacts.models import AddressBook, Contact
from contacts.services import address_book_for, contact_create
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def sign_in(page, live_server, address):
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")


def both_widths(page, screenshot, name):
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(name)
    page.set_viewport_size(PHONE)
    screenshot(f"{name}-phone")
    page.set_viewport_size(DESKTOP)


def test_a_second_address_book_a_contact_in_it_moved_back_and_the_book_deleted(plans, page, live_server,
                                                                                screenshot):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    default = address_book_for(account=user.account, mailbox=mailbox)
    contact_create(book=default, name="Mum", email="mum@home.test")
    page.set_viewport_size(DESKTOP)
    sign_in(page, live_server, mailbox.address)

    page.goto(f"{live_server.url}/webmail/contacts/")
    nav = page.get_by_role("navigation", name="Contacts")
    nav.get_by_role("link", name="Address books").click()
    page.get_by_label("Name", exact=True).fill("Work")
    page.get_by_label("Colour", exact=True).fill("#9333ea")
    page.get_by_role("button", name="Add address book").click()
    expect(page.get_by_text("“Work” added.")).to_be_visible()
    work = AddressBook.objects.get(mailbox=mailbox, name="Work")
    assert work.color == "#9333ea"
    expect(page.get_by_text("The default book cannot be deleted.")).to_be_visible()
    both_widths(page, screenshot, "webmail-address-books")

    nav.get_by_role("link", name="New contact").click()
    page.get_by_label("Name", exact=True).fill("Bo Boss")
    page.get_by_label("Email").fill("bo@office.test")
    expect(page.get_by_label("Address book")).to_have_value(str(default.pk))
    page.get_by_label("Address book").select_option(label="Work")
    both_widths(page, screenshot, "webmail-address-books-form")
    page.get_by_role("button", name="Add contact").click()
    expect(page.get_by_text("Bo Boss added to Work.")).to_be_visible()
    assert Contact.objects.get(name="Bo Boss").book == work

    nav.get_by_role("link", name="All contacts").click()
    boss_row = page.locator(".contact-row", has_text="Bo Boss")
    expect(boss_row.locator(".contact-book")).to_have_text("In Work")
    assert "#9333ea" in boss_row.locator(".contact-book").get_attribute("style")
    expect(page.locator(".contact-row", has_text="Mum").locator(".contact-book")).to_have_text("In Contacts")
    both_widths(page, screenshot, "webmail-address-books-list")

    nav.get_by_role("link", name="Address book Work").click()
    expect(page.get_by_role("heading", name="Work", level=1)).to_be_visible()
    expect(page.locator(".contact-row")).to_have_count(1)
    both_widths(page, screenshot, "webmail-address-books-one")

    page.get_by_role("link", name="Bo Boss", exact=True).click()
    page.get_by_role("link", name="Edit").first.click()
    page.get_by_label("Address book").select_option(label="Contacts")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Bo Boss saved.")).to_be_visible()
    assert Contact.objects.get(name="Bo Boss").book == default

    nav.get_by_role("link", name="Address books").click()
    page.get_by_label("Name of Work").fill("Office")
    page.locator(".book-list__item", has=page.get_by_label("Name of Work")).get_by_role(
        "button", name="Save").click()
    expect(page.get_by_text("“Office” saved.")).to_be_visible()
    page.get_by_role("link", name="Delete Office").click()
    expect(page.get_by_role("heading", name="Delete the address book “Office”?")).to_be_visible()
    both_widths(page, screenshot, "webmail-address-books-delete")
    page.get_by_role("button", name="Delete address book").click()
    expect(page.get_by_text("“Office” and the contacts in it deleted.")).to_be_visible()
    assert list(AddressBook.objects.filter(mailbox=mailbox).values_list("name", flat=True)) == ["Contacts"]
    assert Contact.objects.filter(book=default).count() == 2
