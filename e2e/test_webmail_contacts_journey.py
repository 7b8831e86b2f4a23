"""A mailbox owner opens Contacts in the webmail, imports a vCard file of three people, finds one by
searching, edits them and exports the book; the file is read back with vobject. Each contacts page at
desktop and phone width: e2e/screenshots/webmail-contacts-*.png."""
import re
import uuid

import pytest
import vobject
from playwright.sync_api import expect

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
VCARDS = (
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:imported-1\r\nFN:Grace Hopper\r\nN:Hopper;Grace;;;\r\n"
    "EMAIL;TYPE=INTERNET:grace@navy.test\r\nTEL;TYPE=CELL:+1 555 0100\r\nORG:US Navy\r\nCATEGORIES:Navy\r\n"
    "END:VCARD\r\n"
    "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:imported-2\r\nFN:Alan Turing\r\nEMAIL:alan@bletchley.test\r\n"
    "ORG:Bletchley Park\r\nEND:VCARD\r\n"
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:imported-3\r\nFN:Ada Lovelace\r\nEMAIL:ada@engine.test\r\n"
    "TEL:+44 20 7946 0958\r\nCATEGORIES:Navy\r\nEND:VCARD\r\n"
)


def test_an_owner_imports_searches_edits_and_exports_contacts(plans, settings, page, live_server, screenshot,
                                                              tmp_path):
    settings.MAIL_STORE = "embedded"
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="pro"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="ann", password=PASSWORD, display_name="Ann")
    rows = page.locator("#contact-list tbody tr")

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    page.get_by_role("navigation", name="Apps").get_by_role("link", name="Contacts").click()
    expect(page.get_by_role("heading", name="Contacts", level=1)).to_be_visible()
    expect(page.get_by_role("heading", name="No contacts yet")).to_be_visible()
    screenshot("webmail-contacts-empty")

    # import a .vcf file through the file input
    page.get_by_role("link", name="Import a vCard file").click()
    page.get_by_label("vCard file (.vcf)").set_input_files(
        files=[{"name": "people.vcf", "mimeType": "text/vcard", "buffer": VCARDS.encode()}])
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="3 contacts added, 0 updated.")).to_be_visible()
    screenshot("webmail-contacts-import")
    page.get_by_role("link", name="Show my contacts").click()
    expect(rows).to_have_count(3)
    expect(rows.locator(".contact-row__name a")).to_have_text(["Ada Lovelace", "Alan Turing", "Grace Hopper"])
    sidebar = page.get_by_role("navigation", name="Contacts")
    expect(sidebar.get_by_role("link", name=re.compile("Navy"))).to_contain_text("2")
    screenshot("webmail-contacts-list")

    # search: htmx swaps the list as one types; Enter works the same without JavaScript
    page.get_by_role("searchbox", name="Search contacts").fill("bletchley")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Alan Turing")
    expect(page.get_by_role("status").filter(has_text="1 contact matches “bletchley”.")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/webmail/contacts/\?q=bletchley$"))
    screenshot("webmail-contacts-search")

    # open Alan, edit him
    rows.first.get_by_role("link", name="Alan Turing", exact=True).click()
    expect(page.get_by_role("heading", name="Alan Turing", level=1)).to_be_visible()
    page.get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Company").fill("University of Manchester")
    page.get_by_label("Phone").fill("+44 161 306 6000")
    page.get_by_label("Navy").check()
    screenshot("webmail-contacts-edit")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status").filter(has_text="Alan Turing saved.")).to_be_visible()
    expect(page.locator(".contact-facts")).to_contain_text("University of Manchester")
    screenshot("webmail-contacts-detail")

    # export every contact and read the file back
    page.get_by_role("link", name="Contacts", exact=True).first.click()
    with page.expect_download() as download_info:
        page.get_by_role("main").get_by_role("link", name="Export", exact=True).click()
    download = download_info.value
    assert download.suggested_filename == "contacts.vcf"
    path = tmp_path / "contacts.vcf"
    download.save_as(path)
    cards = {card.fn.value: card for card in vobject.readComponents(path.read_text())}
    assert sorted(cards) == ["Ada Lovelace", "Alan Turing", "Grace Hopper"]
    alan = cards["Alan Turing"]
    assert (alan.org.value, alan.tel.value, alan.categories.value) == (["University of Manchester"],
                                                                      "+44 161 306 6000", ["Navy"])

    # every page at desktop and phone width
    contact_id = mailbox.address_books.get().contacts.get(uid="imported-2").pk
    pages = {"list": "", "detail": f"{contact_id}/", "edit": f"{contact_id}/edit/", "groups": "groups/",
             "import": "import/", "new": "new/"}
    for viewport, suffix in ((DESKTOP, "-desktop"), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        for name, path_ in pages.items():
            page.goto(f"{live_server.url}/webmail/contacts/{path_}")
            expect(page.get_by_role("navigation", name="Contacts")).to_be_visible()
            screenshot(f"webmail-contacts-{name}{suffix}")
