"""The portal's pages for a client mailbox's contacts: the list with search and group filter, add and
edit with inline errors, delete, groups, the CSV import in two steps (preview saves nothing) and export,
the plan gate, the stranger rule and CSRF."""
import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from billing.services.mailboxes import partner_mailbox_open
from contacts.models import Contact, ContactGroup
from contacts.services import client_address_book, contact_create, group_create
from mailcore.partners.models import PartnerClient
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def partner(alice):
    partner = hosting_partner_enable(account=alice.account, status="active")
    slots_grant(partner=partner, count=5)
    return partner


@pytest.fixture
def acme(partner):
    return PartnerClient.objects.create(partner=partner, name="Acme Ltd")


@pytest.fixture
def domain(partner, acme):
    domain = make_domain(partner.account, "acme.test")
    domain.client = acme
    domain.save(update_fields=["client"])
    return domain


@pytest.fixture
def partner_mailbox(partner, domain):
    return partner_mailbox_open(partner=partner, domain=domain, local_part="news", password="s3cret-pass",
                                plan_id="premium", display_name="Acme News")


@pytest.fixture
def book(acme):
    return client_address_book(client=acme)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def stranger_mailbox(db):
    user = UserFactory(email="dave@example.test", account__plan_code="premium")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=1)
    domain = make_domain(user.account, "dave.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Dave's client")
    domain.save(update_fields=["client"])
    return partner_mailbox_open(partner=partner, domain=domain, local_part="dave", password="s3cret-pass",
                                plan_id="premium")


def url(partner_mailbox, suffix="") -> str:
    return f"/portal/mailboxes/{partner_mailbox.pk}/contacts/{suffix}"


def field_errors(html: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.DOTALL)
    return found.group(1) if found else ""


# the list


def test_the_list_shows_the_clients_contacts_with_search_and_group_filter(alice_client, partner_mailbox, book):
    group = group_create(book=book, name="Customers")
    contact_create(book=book, name="Ann Baker", email="ann@bakery.test", company="Bakery", groups=["Customers"])
    contact_create(book=book, name="Carl Smith", email="carl@forge.test", company="Forge")

    html = alice_client.get(url(partner_mailbox)).content.decode()
    assert "ann@bakery.test" in html and "carl@forge.test" in html
    assert "Acme Ltd's contacts: 2 contacts, 1 group" in html

    searched = alice_client.get(url(partner_mailbox), {"q": "bakery"}).content.decode()
    assert "ann@bakery.test" in searched and "carl@forge.test" not in searched

    grouped = alice_client.get(url(partner_mailbox), {"group": group.pk}).content.decode()
    assert "ann@bakery.test" in grouped and "carl@forge.test" not in grouped


def test_the_search_swaps_only_the_table_with_htmx(alice_client, partner_mailbox, book):
    contact_create(book=book, name="Ann Baker", email="ann@bakery.test")
    html = alice_client.get(url(partner_mailbox), {"q": "nobody"}, HTTP_HX_TARGET="contacts", **HTMX).content.decode()
    assert html.startswith('<section id="contacts"')
    assert "No contacts match" in html


def test_the_mailbox_page_links_to_its_contacts_and_campaigns(alice_client, partner_mailbox):
    html = alice_client.get(f"/portal/mailboxes/{partner_mailbox.pk}/").content.decode()
    assert f'href="{url(partner_mailbox)}"' in html
    assert f'href="/portal/mailboxes/{partner_mailbox.pk}/campaigns/"' in html


# add, edit, delete


def test_adding_a_contact_saves_it_in_the_clients_book(alice_client, partner_mailbox, book):
    group_create(book=book, name="Customers")
    response = alice_client.post(url(partner_mailbox, "add/"), {"name": "Ann Baker", "email": "Ann@Bakery.test",
                                                               "company": "Bakery", "groups": ["Customers"]})
    assert response.status_code == 302
    contact = Contact.objects.get()
    assert (contact.book, contact.name, contact.email, contact.company) == (book, "Ann Baker", "ann@bakery.test",
                                                                              "Bakery")
    assert [group.name for group in contact.groups.all()] == ["Customers"]


def test_a_contact_given_only_an_address_is_named_after_it(alice_client, partner_mailbox, book):
    response = alice_client.post(url(partner_mailbox, "add/"), {"email": "Ann@Bakery.test"}, **HTMX)
    assert response.status_code == 200
    assert "ann@bakery.test" in response.content.decode()
    contact = Contact.objects.get()
    assert contact.name == "ann@bakery.test" and "FN:ann@bakery.test" in contact.vcard

    edited = alice_client.post(url(partner_mailbox, f"{contact.pk}/"), {"name": "", "email": "ann@bakery.test"})
    assert edited.status_code == 302
    contact.refresh_from_db()
    assert contact.name == "ann@bakery.test" and "FN:ann@bakery.test" in contact.vcard


def test_a_bad_address_comes_back_next_to_its_field_and_nothing_is_saved(alice_client, partner_mailbox, book):
    response = alice_client.post(url(partner_mailbox, "add/"), {"name": "Ann", "email": "not-an-address"})
    assert response.status_code == 422
    assert "Enter a valid email address." in field_errors(response.content.decode(), "new_email")
    assert Contact.objects.count() == 0


def test_an_address_already_in_the_book_is_refused(alice_client, partner_mailbox, book):
    contact_create(book=book, name="Ann", email="ann@bakery.test")
    response = alice_client.post(url(partner_mailbox, "add/"), {"email": "ANN@bakery.test"}, **HTMX)
    assert "ann@bakery.test is in these contacts already." in field_errors(response.content.decode(), "new_email")
    assert Contact.objects.count() == 1


def test_editing_a_contact_changes_it(alice_client, partner_mailbox, book):
    contact = contact_create(book=book, name="Ann", email="ann@bakery.test")
    page = alice_client.get(url(partner_mailbox, f"{contact.pk}/"))
    assert 'value="ann@bakery.test"' in page.content.decode()
    response = alice_client.post(url(partner_mailbox, f"{contact.pk}/"),
                                 {"name": "Ann Baker", "email": "ann@bakery.test", "phone": "+1 555 0100"})
    assert response.status_code == 302
    contact.refresh_from_db()
    assert (contact.name, contact.phone) == ("Ann Baker", "+1 555 0100")
    assert "TEL" in contact.vcard and "Ann Baker" in contact.vcard


def test_deleting_a_contact_asks_first_without_javascript_then_removes_it(alice_client, partner_mailbox, book):
    contact = contact_create(book=book, name="Ann", email="ann@bakery.test")
    question = alice_client.get(url(partner_mailbox, f"{contact.pk}/delete/"))
    assert "Delete Ann?" in question.content.decode()
    assert Contact.objects.count() == 1
    alice_client.post(url(partner_mailbox, f"{contact.pk}/delete/"))
    assert Contact.objects.count() == 0


def test_groups_are_created_and_deleted_keeping_their_contacts(alice_client, partner_mailbox, book):
    alice_client.post(url(partner_mailbox, "groups/"), {"name": "VIP"})
    group = ContactGroup.objects.get(book=book)
    contact_create(book=book, name="Ann", email="ann@bakery.test", groups=["VIP"])
    again = alice_client.post(url(partner_mailbox, "groups/"), {"name": "VIP"})
    assert again.status_code == 422
    assert "There is a group named &#x27;VIP&#x27; already." in field_errors(again.content.decode(), "group_name")
    alice_client.post(url(partner_mailbox, f"groups/{group.pk}/delete/"))
    assert ContactGroup.objects.count() == 0
    assert Contact.objects.get().groups.count() == 0


# CSV


CSV = "email,name,company,group\nann@bakery.test,Ann Baker,Bakery,Customers\nnot-an-address,Bad,,\n" \
      "carl@forge.test,Carl,Forge,\n"


def upload(text: str | bytes, name: str = "people.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text, content_type="text/csv")


def test_the_csv_preview_shows_each_row_and_saves_nothing(alice_client, partner_mailbox, book):
    response = alice_client.post(url(partner_mailbox, "import/"), {"file": upload(CSV)})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Check the import" in html and "Import 2 contacts" in html
    assert "email: &#x27;not-an-address&#x27; is not a valid address." in html
    assert html.count('<span class="badge badge--ok">New</span>') == 2
    assert Contact.objects.count() == 0
    assert ContactGroup.objects.count() == 0


def test_the_import_applies_what_was_previewed(alice_client, partner_mailbox, book):
    page = alice_client.post(url(partner_mailbox, "import/"), {"file": upload(CSV)}).content.decode()
    text = re.search(r'<input type="hidden" name="text" value="([^"]*)"', page).group(1)
    response = alice_client.post(url(partner_mailbox, "import/"), {"text": html.unescape(text)}, follow=True)
    assert "Imported: 2 contacts added, 0 updated, 1 skipped." in response.content.decode()
    assert sorted(Contact.objects.filter(book=book).values_list("email", flat=True)) == ["ann@bakery.test",
                                                                                       "carl@forge.test"]
    assert Contact.objects.get(email="ann@bakery.test").groups.get().name == "Customers"


def test_an_unreadable_file_is_refused_with_the_reason(alice_client, partner_mailbox):
    response = alice_client.post(url(partner_mailbox, "import/"), {"file": upload("name,company\nAnn,Bakery\n")})
    assert response.status_code == 422
    assert "The header row has no email column" in field_errors(response.content.decode(), "file")
    latin1 = alice_client.post(url(partner_mailbox, "import/"), {"file": upload("email\nj\xf6rg@x.test\n".encode("latin-1"))})
    assert latin1.status_code == 422
    assert "The file is not UTF-8 text." in field_errors(latin1.content.decode(), "file")
    assert Contact.objects.count() == 0


def test_the_export_is_a_csv_of_the_book(alice_client, partner_mailbox, book):
    contact_create(book=book, name="Ann", email="ann@bakery.test", company="=SUM(A1)")
    response = alice_client.get(url(partner_mailbox, "export.csv"))
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="acme-ltd-contacts.csv"'
    assert response.content.decode() == "email,name,phone,company,notes,group\r\nann@bakery.test,Ann,,'=SUM(A1),,\r\n"


# gates, strangers, CSRF


def test_a_plan_without_contacts_gets_a_page_that_says_so(alice_client, partner, domain):
    free = partner_mailbox_open(partner=partner, domain=domain, local_part="free", password="s3cret-pass",
                                plan_id="pro")
    free.mailbox.plan = type(free.mailbox.effective_plan).objects.get(code="free")
    free.mailbox.save(update_fields=["plan"])
    response = alice_client.get(url(free))
    assert response.status_code == 403
    assert "Contacts needs the Pro plan or a higher plan; your plan does not include it." in response.content.decode()
    response = alice_client.post(url(free, "add/"), {"email": "ann@bakery.test"})
    assert response.status_code == 403
    assert Contact.objects.count() == 0


def test_a_mailbox_whose_domain_has_no_client_explains_why(alice_client, partner):
    domain = make_domain(partner.account, "loose.test")
    loose = partner_mailbox_open(partner=partner, domain=domain, local_part="x", password="s3cret-pass",
                                 plan_id="premium")
    response = alice_client.get(url(loose))
    assert response.status_code == 409
    assert "This mailbox has no client" in response.content.decode()


def test_another_partners_mailbox_contact_and_group_are_404(alice_client, partner_mailbox, stranger_mailbox):
    theirs = client_address_book(client=stranger_mailbox.mailbox.domain.client)
    contact = contact_create(book=theirs, name="Dave's", email="x@dave.test")
    group = group_create(book=theirs, name="Theirs")
    for path in ("", "import/", "export.csv", f"{contact.pk}/"):
        assert alice_client.get(url(stranger_mailbox, path)).status_code == 404
    assert alice_client.get(url(partner_mailbox, f"{contact.pk}/")).status_code == 404
    assert alice_client.post(url(partner_mailbox, f"{contact.pk}/delete/")).status_code == 404
    assert alice_client.post(url(partner_mailbox, f"groups/{group.pk}/delete/")).status_code == 404
    assert alice_client.post(url(stranger_mailbox, "add/"), {"email": "a@b.test"}).status_code == 404
    assert Contact.objects.filter(book=theirs).count() == 1 and ContactGroup.objects.filter(book=theirs).exists()


def test_a_post_without_the_csrf_token_is_refused(alice, partner_mailbox, book):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(url(partner_mailbox, "add/"), {"email": "ann@bakery.test"}).status_code == 403
    assert strict.post(url(partner_mailbox, "groups/"), {"name": "VIP"}).status_code == 403
    assert Contact.objects.count() == 0 and ContactGroup.objects.count() == 0


def test_a_large_import_goes_on_in_the_background_with_its_progress_page(alice_client, partner_mailbox, book,
                                                                          stranger_mailbox):
    from imports.models import ImportJob
    from imports.services import INLINE_MAX_ITEMS, import_job_advance

    rows = INLINE_MAX_ITEMS + 50
    csv_text = "email,name,group\n" + "".join(f"p{n}@people.test,Person {n},Customers\n" for n in range(rows))
    page = alice_client.post(url(partner_mailbox, "import/"), {"file": upload(csv_text)}).content.decode()
    text = re.search(r'<input type="hidden" name="text" value="([^"]*)"', page).group(1)

    response = alice_client.post(url(partner_mailbox, "import/"), {"text": html.unescape(text)})

    job = ImportJob.objects.get()
    progress = url(partner_mailbox, f"import/{job.pk}/")
    assert response.status_code == 302 and response["Location"] == progress
    assert Contact.objects.count() == 0
    waiting = alice_client.get(progress).content.decode()
    assert f"0 of {rows} contacts done (0%)." in waiting
    assert f'hx-get="{progress}" hx-trigger="every 1s"' in waiting
    assert alice_client.get(progress, **HTMX).content.decode().lstrip().startswith('<section id="import-progress"')
    assert alice_client.get(url(stranger_mailbox, f"import/{job.pk}/")).status_code == 404

    import_job_advance(job_id=job.pk, budget_seconds=None)  # what the worker's imports job runs

    done = alice_client.get(progress).content.decode()
    assert f"{rows} contacts added, 0 updated." in done and "Show the contacts" in done
    assert Contact.objects.filter(book=book, groups__name="Customers").count() == rows
