"""/v1/hosting/mailboxes/{id}/contacts: the client's contacts and groups (shared by the client's
mailboxes), the plan gate, the scopes, the stranger rule, and CSV preview, import and export."""
import csv
import io

import pytest

from billing.services.mailboxes import partner_mailbox_open
from mailcore.accounts.models import Plan
from mailcore.apikeys.scopes import PARTNER_SCOPES
from contacts.models import Contact, ContactGroup
from contacts.services import client_address_book, contact_create
from mailcore.domains.services import domain_mark_verified
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.clients import key_client
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

ALL = list(PARTNER_SCOPES)


@pytest.fixture(autouse=True)
def embedded(settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path


def open_mailbox(user, domain_name: str, local_part: str, plan_id: str = "premium"):
    """A partner mailbox on a domain claimed for a client (the client named after the domain)."""
    partner = hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    domain = partner.account.domains.filter(name=domain_name).first() or domain_mark_verified(
        domain=domain_add_for_partner(partner=partner, name=domain_name))
    slots_grant(partner=partner, count=1)
    return partner_mailbox_open(partner=partner, domain=domain, local_part=local_part, password="mailbox-pass-1",
                                plan_id=plan_id)


@pytest.fixture
def box(alice):
    """alice's client mailbox ann@acme.test on the Premium plan."""
    return open_mailbox(alice, "acme.test", "ann")


@pytest.fixture
def book(box):
    return client_address_book(client=box.mailbox.domain.client)


@pytest.fixture
def hosting(alice, box):
    return key_client(alice, ALL)


@pytest.fixture
def other_partner(charlie):
    """charlie, another partner, with his own client mailbox and every partner scope."""
    carl = open_mailbox(charlie, "charlie.test", "carl")
    client = key_client(charlie, ALL)
    client.box = carl
    return client


def url(box, tail: str = "") -> str:
    return f"/v1/hosting/mailboxes/{box.pk}/contacts{tail}"


def add(hosting, box, **fields) -> dict:
    response = hosting.post(url(box), fields, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def add_group(hosting, box, name: str) -> dict:
    response = hosting.post(url(box, "/groups"), {"name": name}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def snapshot(book) -> list[tuple]:
    return [(c.email, c.name, c.phone, c.company, c.notes, tuple(g.name for g in c.groups.all()))
            for c in Contact.objects.filter(book=book).order_by("email").prefetch_related("groups")]


# contacts


def test_a_new_contact_is_in_the_clients_book_with_its_group(hosting, box, book):
    group = add_group(hosting, box, "Customers")
    created = add(hosting, box, email="Bea@Shop.test", name="Bea Baker", phone="+44 1", company="Shop",
                  notes="likes bread", group_id=group["id"])
    contact = Contact.objects.get()
    assert contact.book == book
    assert created == {"id": contact.pk, "email": "bea@shop.test", "name": "Bea Baker", "phone": "+44 1",
                       "company": "Shop", "notes": "likes bread", "group_id": group["id"],
                       "created_at": created["created_at"], "updated_at": created["updated_at"]}
    assert hosting.get(url(box, f"/{contact.pk}")).json() == created
    assert [g.name for g in contact.groups.all()] == ["Customers"]


def test_only_email_is_required_and_the_name_defaults_to_it(hosting, box):
    created = add(hosting, box, email="cy@shop.test")
    assert (created["name"], created["phone"], created["group_id"]) == ("cy@shop.test", "", None)


def test_every_mailbox_of_the_client_sees_the_same_contacts(alice, hosting, box):
    add(hosting, box, email="bea@shop.test")
    sibling = open_mailbox(alice, "acme.test", "sales")
    assert [c["email"] for c in hosting.get(url(sibling)).json()["contacts"]] == ["bea@shop.test"]


def test_another_clients_mailbox_has_its_own_contacts(alice, hosting, box):
    add(hosting, box, email="bea@shop.test")
    elsewhere = open_mailbox(alice, "other.test", "olga")
    assert hosting.get(url(elsewhere)).json() == {"contacts": [], "total": 0, "page": 1, "page_size": 20}


def test_the_list_filters_by_group_and_searches_email_name_and_company(hosting, box):
    vip = add_group(hosting, box, "VIP")
    add(hosting, box, email="bea@shop.test", name="Bea Baker", company="Bakery", group_id=vip["id"])
    add(hosting, box, email="cy@corp.test", name="Cy Cole", company="Corp")
    add(hosting, box, email="dee@bakers.test", name="Dee", company="Flour")

    def emails(**query):
        response = hosting.get(url(box), query)
        assert response.status_code == 200, response.json()
        return [c["email"] for c in response.json()["contacts"]]

    assert emails() == ["bea@shop.test", "cy@corp.test", "dee@bakers.test"]
    assert emails(group_id=vip["id"]) == ["bea@shop.test"]
    assert emails(q="bak") == ["bea@shop.test", "dee@bakers.test"]
    assert emails(q="CORP") == ["cy@corp.test"]
    assert emails(q="bak", group_id=vip["id"]) == ["bea@shop.test"]


def test_the_list_pages_like_the_aliases_list(hosting, box):
    for n in range(5):
        add(hosting, box, email=f"p{n}@shop.test", name=f"Person {n}")
    body = hosting.get(url(box), {"page": 2, "page_size": 2}).json()
    assert ([c["name"] for c in body["contacts"]], body["total"], body["page"], body["page_size"]) == (
        ["Person 2", "Person 3"], 5, 2, 2)
    assert hosting.get(url(box), {"page_size": 101}).status_code == 422
    assert hosting.get(url(box), {"group_id": 999999}).status_code == 422


def test_update_changes_only_the_fields_sent_and_group_id_sets_exactly_that_group(hosting, box):
    a, b = add_group(hosting, box, "A"), add_group(hosting, box, "B")
    created = add(hosting, box, email="bea@shop.test", name="Bea", company="Shop", group_id=a["id"])
    response = hosting.patch(url(box, f"/{created['id']}"), {"company": "Bakery", "group_id": b["id"]}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["name"], response.json()["company"], response.json()["group_id"]) == ("Bea", "Bakery",
                                                                                                 b["id"])
    assert [g.name for g in Contact.objects.get().groups.all()] == ["B"]
    cleared = hosting.patch(url(box, f"/{created['id']}"), {"group_id": None}, format="json").json()
    assert cleared["group_id"] is None
    assert Contact.objects.get().groups.count() == 0


def test_group_id_shows_the_first_group_by_name_when_webmail_put_it_in_several(hosting, box, book):
    contact = contact_create(book=book, name="Bea", email="bea@shop.test", groups=["Zeta", "Alpha"])
    alpha = ContactGroup.objects.get(name="Alpha")
    assert hosting.get(url(box, f"/{contact.pk}")).json()["group_id"] == alpha.pk


def test_delete_removes_the_contact(hosting, box):
    created = add(hosting, box, email="bea@shop.test")
    assert hosting.delete(url(box, f"/{created['id']}")).status_code == 204
    assert not Contact.objects.exists()
    assert hosting.get(url(box, f"/{created['id']}")).status_code == 404


@pytest.mark.parametrize("payload, field", [
    ({}, "email"),
    ({"email": "not-an-address"}, "email"),
    ({"email": "bea@shop.test", "name": "x" * 256}, "name"),
    ({"email": "bea@shop.test", "phone": "1" * 65}, "phone"),
    ({"email": "bea@shop.test", "group_id": "3"}, "group_id"),
    ({"email": "bea@shop.test", "group_id": 999999}, "group_id"),
    ({"email": "bea@shop.test", "groups": ["A"]}, "groups"),
    ({"email": 7}, "email"),
])
def test_a_bad_contact_is_a_422_on_its_field_and_nothing_is_stored(hosting, box, payload, field):
    response = hosting.post(url(box), payload, format="json")
    assert response.status_code == 422
    assert field in response.json()["errors"]
    assert not Contact.objects.exists()


def test_an_address_already_in_the_book_is_a_409(hosting, box):
    first = add(hosting, box, email="bea@shop.test", name="Bea")
    response = hosting.post(url(box), {"email": "BEA@shop.test", "name": "Other"}, format="json")
    assert response.status_code == 409
    assert str(first["id"]) in response.json()["detail"]
    other = add(hosting, box, email="cy@shop.test")
    assert hosting.patch(url(box, f"/{other['id']}"), {"email": "bea@shop.test"}, format="json").status_code == 409
    assert sorted(Contact.objects.values_list("email", flat=True)) == ["bea@shop.test", "cy@shop.test"]


# groups


def test_groups_list_with_member_counts_and_delete_keeps_the_contacts(hosting, box):
    vip, empty = add_group(hosting, box, "VIP"), add_group(hosting, box, "Empty")
    add(hosting, box, email="bea@shop.test", group_id=vip["id"])
    add(hosting, box, email="cy@shop.test", group_id=vip["id"])
    listed = hosting.get(url(box, "/groups")).json()
    assert [(g["id"], g["name"], g["contacts_count"]) for g in listed] == [(empty["id"], "Empty", 0),
                                                                         (vip["id"], "VIP", 2)]
    assert vip["contacts_count"] == 0
    assert hosting.delete(url(box, f"/groups/{vip['id']}")).status_code == 204
    assert [g["name"] for g in hosting.get(url(box, "/groups")).json()] == ["Empty"]
    assert [c["group_id"] for c in hosting.get(url(box)).json()["contacts"]] == [None, None]
    assert Contact.objects.count() == 2


def test_a_group_name_twice_is_a_409_and_a_blank_or_long_one_a_422(hosting, box):
    add_group(hosting, box, "VIP")
    assert hosting.post(url(box, "/groups"), {"name": "VIP"}, format="json").status_code == 409
    assert hosting.post(url(box, "/groups"), {"name": " "}, format="json").status_code == 422
    assert hosting.post(url(box, "/groups"), {"name": "x" * 101}, format="json").status_code == 422
    assert hosting.post(url(box, "/groups"), {}, format="json").status_code == 422
    assert list(ContactGroup.objects.values_list("name", flat=True)) == ["VIP"]


# plan gate, scopes, strangers, no client


def test_a_mailbox_whose_plan_lacks_contacts_gets_a_403_naming_the_plan(hosting, box):
    Mailbox.objects.filter(pk=box.mailbox_id).update(plan=Plan.objects.get(code="free"))
    for response in (hosting.get(url(box)), hosting.post(url(box), {"email": "bea@shop.test"}, format="json"),
                     hosting.get(url(box, "/groups")), hosting.get(url(box, "/export"))):
        assert response.status_code == 403
        assert "Pro plan" in response.json()["detail"]
        assert "This mailbox is on the Free plan." in response.json()["detail"]
    assert not Contact.objects.exists()


def test_reading_needs_the_read_scope_and_changing_the_write_scope(alice, box):
    reader = key_client(alice, ["partner:mailboxes:read"])
    assert reader.get(url(box)).status_code == 200
    assert reader.get(url(box, "/groups")).status_code == 200
    assert reader.get(url(box, "/export")).status_code == 200
    assert reader.post(url(box), {"email": "bea@shop.test"}, format="json").status_code == 403
    assert reader.post(url(box, "/groups"), {"name": "VIP"}, format="json").status_code == 403
    assert reader.post(url(box, "/import"), {"csv": "email\nbea@shop.test\n"}, format="json").status_code == 403
    writer_only = key_client(alice, ["partner:mailboxes:write"])
    assert writer_only.get(url(box)).status_code == 403
    assert not Contact.objects.exists() and not ContactGroup.objects.exists()


def test_another_partners_mailbox_contacts_and_groups_are_404_and_untouched(hosting, box, book, other_partner):
    group = add_group(hosting, box, "VIP")
    contact = add(hosting, box, email="bea@shop.test", group_id=group["id"])
    before = snapshot(book)
    stranger, carl = other_partner, other_partner.box
    assert stranger.get(url(box)).status_code == 404
    assert stranger.post(url(box), {"email": "x@shop.test"}, format="json").status_code == 404
    assert stranger.get(url(box, f"/{contact['id']}")).status_code == 404
    assert stranger.patch(url(box, f"/{contact['id']}"), {"name": "X"}, format="json").status_code == 404
    assert stranger.delete(url(box, f"/{contact['id']}")).status_code == 404
    assert stranger.delete(url(box, f"/groups/{group['id']}")).status_code == 404
    assert stranger.post(url(box, "/import"), {"csv": "email\nx@shop.test\n"}, format="json").status_code == 404
    assert stranger.get(url(box, "/export")).status_code == 404
    # through his own mailbox, alice's ids are not his client's
    assert stranger.get(url(carl, f"/{contact['id']}")).status_code == 404
    assert stranger.patch(url(carl, f"/{contact['id']}"), {"name": "X"}, format="json").status_code == 404
    assert stranger.delete(url(carl, f"/{contact['id']}")).status_code == 404
    assert stranger.delete(url(carl, f"/groups/{group['id']}")).status_code == 404
    assert stranger.post(url(carl), {"email": "x@shop.test", "group_id": group["id"]}, format="json").status_code == 422
    assert snapshot(book) == before
    assert ContactGroup.objects.filter(pk=group["id"]).exists()


def test_another_clients_contact_of_the_same_partner_is_404(alice, hosting, box):
    contact = add(hosting, box, email="bea@shop.test")
    elsewhere = open_mailbox(alice, "other.test", "olga")
    assert hosting.get(url(elsewhere, f"/{contact['id']}")).status_code == 404
    assert hosting.delete(url(elsewhere, f"/{contact['id']}")).status_code == 404
    assert Contact.objects.filter(pk=contact["id"]).exists()


def test_a_mailbox_on_a_domain_without_a_client_is_a_409(alice, hosting):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    slots_grant(partner=partner, count=1)
    clientless = partner_mailbox_open(partner=partner, domain=make_domain(alice.account, "loose.test"),
                                      local_part="lou", password="mailbox-pass-1", plan_id="premium")
    response = hosting.get(url(clientless))
    assert response.status_code == 409
    assert "client" in response.json()["detail"]


# CSV


CSV = ("Email,Name,Phone,Company,Notes,Group,Shoe size\r\n"
       "bea@shop.test,Bea Baker,+44 1,Bakery,,VIP,38\r\n"
       "not-an-address,Nobody,,,,,\r\n"
       "cy@corp.test,Cy Cole,,Corp,\"line one\nline two\",,\r\n"
       "bea@shop.test,Bea Again,,,,,\r\n"
       ",No Email,,,,,\r\n")


def test_a_dry_run_previews_each_row_and_changes_nothing(hosting, box, book):
    add(hosting, box, email="cy@corp.test", name="Cy", company="Old Corp")
    before = snapshot(book)
    response = hosting.post(url(box, "/import"), {"csv": CSV, "dry_run": True}, format="json")
    assert response.status_code == 200, response.json()
    report = response.json()
    assert (report["dry_run"], report["applied"]) == (True, False)
    assert report["columns"] == ["email", "name", "phone", "company", "notes", "group"]
    assert report["unknown_columns"] == ["shoe size"]
    assert report["totals"] == {"rows": 5, "create": 1, "update": 1, "skip": 3, "errors": 3}
    rows = report["rows"]
    assert [(r["row"], r["email"], r["action"]) for r in rows] == [
        (2, "bea@shop.test", "create"), (3, "not-an-address", "skip"), (4, "cy@corp.test", "update"),
        (5, "bea@shop.test", "skip"), (6, "", "skip")]
    assert rows[0] == {"row": 2, "email": "bea@shop.test", "name": "Bea Baker", "phone": "+44 1", "company": "Bakery",
                       "notes": "", "group": "VIP", "action": "create", "errors": [], "contact_id": None}
    assert rows[1]["errors"] == ["email: 'not-an-address' is not a valid address."]
    assert rows[2]["notes"] == "line one\nline two"
    assert rows[3]["errors"] == ["email: bea@shop.test is on row 2 already."]
    assert rows[4]["errors"] == ["email: required."]
    assert snapshot(book) == before
    assert not ContactGroup.objects.exists()


def test_an_import_applies_the_valid_rows_and_reports_like_the_preview(hosting, box, book):
    existing = add(hosting, box, email="cy@corp.test", name="Cy", company="Old Corp", phone="555")
    report = hosting.post(url(box, "/import"), {"csv": CSV}, format="json").json()
    assert (report["dry_run"], report["applied"]) == (False, True)
    assert [r["action"] for r in report["rows"]] == ["create", "skip", "update", "skip", "skip"]
    assert report["rows"][2]["contact_id"] == existing["id"]
    assert snapshot(book) == [
        ("bea@shop.test", "Bea Baker", "+44 1", "Bakery", "", ("VIP",)),
        ("cy@corp.test", "Cy Cole", "555", "Corp", "line one\nline two", ()),  # empty phone cell kept the phone
    ]
    assert report["rows"][0]["contact_id"] == Contact.objects.get(email="bea@shop.test").pk
    again = hosting.post(url(box, "/import"), {"csv": CSV}, format="json").json()
    assert again["totals"] == {"rows": 5, "create": 0, "update": 0, "skip": 5, "errors": 3}


def test_a_text_csv_body_imports_and_dry_run_comes_from_the_query(hosting, box, book):
    body = "email,name\nbea@shop.test,Bea\n"
    preview = hosting.post(url(box, "/import?dry_run=true"), body, content_type="text/csv")
    assert preview.status_code == 200, preview.json()
    assert (preview.json()["applied"], preview.json()["totals"]["create"]) == (False, 1)
    assert not Contact.objects.exists()
    applied = hosting.post(url(box, "/import"), body.encode(), content_type="text/csv")
    assert applied.json()["applied"] is True
    assert snapshot(book) == [("bea@shop.test", "Bea", "", "", "", ())]


@pytest.mark.parametrize("text, words", [
    ("name,phone\nBea,1\n", "no email column"),
    ("", "empty"),
    ("email,email\nbea@shop.test,bea@shop.test\n", "more than once"),
    ("email\n" + "p@shop.test\n" * 5_001, "at most 5000 rows"),
    ("email,name\n" + "\u00e9" * (1024 * 1024 + 1), "at most 2 MB"),  # within 2 M characters, over 2 MB
])
def test_a_file_that_cannot_be_read_is_a_422_and_nothing_changes(hosting, box, text, words):
    response = hosting.post(url(box, "/import"), {"csv": text}, format="json")
    assert response.status_code == 422
    assert words in response.json()["errors"]["csv"][0]
    assert not Contact.objects.exists()


def test_a_body_that_is_not_utf8_is_a_422(hosting, box):
    response = hosting.post(url(box, "/import"), "email,name\nbea@shop.test,B\xe9a\n".encode("latin-1"),
                            content_type="text/csv")
    assert response.status_code == 422
    assert response.json()["errors"]["csv"] == ["The file is not UTF-8 text."]


def test_export_writes_the_same_columns_and_imports_back_unchanged(hosting, box, book):
    vip = add_group(hosting, box, "VIP")
    add(hosting, box, email="bea@shop.test", name="Bea Baker", phone="+44 1", company="=HYPERLINK(\"x\")",
        notes="a, \"quoted\"\nnote", group_id=vip["id"])
    add(hosting, box, email="cy@corp.test", name="@cy", notes="'already quoted")
    response = hosting.get(url(box, "/export"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="contacts.csv"' in response["Content-Disposition"]
    text = response.content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["email", "name", "phone", "company", "notes", "group"],
                    ["cy@corp.test", "'@cy", "", "", "''already quoted", ""],
                    ["bea@shop.test", "Bea Baker", "'+44 1", "'=HYPERLINK(\"x\")", "a, \"quoted\"\nnote", "VIP"]]
    before = snapshot(book)
    Contact.objects.all().delete()
    report = hosting.post(url(box, "/import"), {"csv": text}, format="json").json()
    assert report["totals"]["create"] == 2
    assert snapshot(book) == before


def test_export_by_group(hosting, box):
    vip = add_group(hosting, box, "VIP")
    add(hosting, box, email="bea@shop.test", group_id=vip["id"])
    add(hosting, box, email="cy@corp.test")
    text = hosting.get(url(box, "/export"), {"group_id": vip["id"]}).content.decode()
    assert text == "email,name,phone,company,notes,group\r\nbea@shop.test,bea@shop.test,,,,VIP\r\n"
    assert hosting.get(url(box, "/export"), {"group_id": 999999}).status_code == 422


def test_an_import_matches_an_address_a_phone_stored_in_another_case(hosting, box, book):
    from contacts.services import contact_put

    contact, _ = contact_put(book=book, href="x.vcf", text="BEGIN:VCARD\r\nVERSION:3.0\r\nUID:x\r\nFN:Mixed\r\n"
                             "EMAIL:Mixed@Case.test\r\nEND:VCARD\r\n")
    report = hosting.post(url(box, "/import"), {"csv": "email,name\nmixed@case.test,New Name\n"}, format="json").json()
    assert [(r["action"], r["contact_id"]) for r in report["rows"]] == [("update", contact.pk)]
    assert Contact.objects.get().name == "New Name"


@pytest.mark.django_db(transaction=True)
def test_a_large_import_answers_202_and_the_worker_applies_each_row_once(plans, hosting, box, book, other_partner, tmp_path):
    from imports.services import INLINE_MAX_ITEMS
    from testkit.worker_process import WorkerProcess, wait_until

    add(hosting, box, email="p0@people.test", name="Old name", phone="555")
    rows = INLINE_MAX_ITEMS * 3
    body = "email,name,group\n" + "".join(f"p{n}@people.test,Person {n},Customers\n" for n in range(rows))

    response = hosting.post(url(box, "/import"), body.encode(), content_type="text/csv")

    assert response.status_code == 202, response.json()
    report = response.json()
    job = report["job"]
    assert (report["applied"], report["totals"]["create"], report["totals"]["update"]) == (False, rows - 1, 1)
    assert (job["status"], job["total"], job["position"]) == ("queued", rows, 0)
    assert job["url"] == f"http://testserver{url(box, '/imports/')}{job['id']}"
    assert Contact.objects.filter(book=book).count() == 1
    assert other_partner.get(url(other_partner.box, f"/imports/{job['id']}")).status_code == 404
    worker = WorkerProcess(tmp_path / "worker")
    try:
        worker.start()
        wait_until(lambda: hosting.get(job["url"]).json()["status"] == "done", timeout=300, every=0.5,
                   what="the import done", workers=[worker])
    finally:
        worker.stop()
    done = hosting.get(job["url"]).json()
    assert (done["created"], done["updated"], done["failed"], done["position"]) == (rows - 1, 1, 0, rows)
    assert Contact.objects.filter(book=book).count() == rows
    assert Contact.objects.get(book=book, email="p0@people.test").name == "Person 0"  # updated, phone kept
    assert Contact.objects.get(book=book, email="p0@people.test").phone == "555"
    assert Contact.objects.filter(book=book, groups__name="Customers").count() == rows
