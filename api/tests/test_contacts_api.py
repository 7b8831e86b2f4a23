"""/contacts: list with search and paging, create, fetch, PATCH, delete; plan gate, scopes, field
rules, the stranger rule and the mailbox's own book."""
import pytest

from contacts.models import AddressBook, Contact
from testkit.clients import key_client, login_client
from testkit.factories import PASSWORD, UserFactory, make_mailbox

pytestmark = pytest.mark.django_db

ANN = {"name": "Ann Example", "email": "Ann@Example.COM", "phone": "+44 20 7946 0000", "company": "Acme"}


def create(client, **fields):
    return client.post("/contacts", {**ANN, **fields}, format="json")


@pytest.fixture
def dora_api(db):
    """A stranger on the Premium plan: the plan gate lets her through, so only the stranger rule stops her."""
    return login_client(UserFactory(email="dora@example.test", account__plan_code="premium"))


def test_create_fetch_update_delete(alice_api, alice):
    created = create(alice_api, notes="Met at the fair", groups=["Customers"])
    assert created.status_code == 201, created.json()
    contact = created.json()
    assert {key: contact[key] for key in ("name", "email", "phone", "company", "notes", "groups", "mailbox")} == {
        "name": "Ann Example", "email": "ann@example.com", "phone": "+44 20 7946 0000", "company": "Acme",
        "notes": "Met at the fair", "groups": ["Customers"], "mailbox": None}
    assert set(contact) == {"id", "uid", "name", "email", "phone", "company", "notes", "groups", "mailbox",
                            "address_book_id", "created_at", "updated_at"}
    stored = Contact.objects.get()
    assert stored.book == AddressBook.objects.get(account=alice.account, mailbox=None)
    assert "EMAIL" in stored.vcard and "ann@example.com" in stored.vcard
    assert alice_api.get(f"/contacts/{contact['id']}").json() == contact

    etag = stored.etag
    patched = alice_api.patch(f"/contacts/{contact['id']}", {"company": "Initech", "groups": []}, format="json")
    assert patched.status_code == 200
    body = patched.json()
    assert (body["company"], body["name"], body["groups"]) == ("Initech", "Ann Example", [])
    stored.refresh_from_db()
    assert stored.company == "Initech" and "Initech" in stored.vcard
    assert stored.etag != etag

    assert alice_api.delete(f"/contacts/{contact['id']}").status_code == 204
    assert alice_api.get(f"/contacts/{contact['id']}").status_code == 404
    assert Contact.objects.count() == 0


def test_search_matches_name_email_or_company_in_any_case(alice_api):
    create(alice_api, name="Ann Example", email="ann@example.com", company="Acme")
    create(alice_api, name="Bert Brown", email="bert@initech.test", company="Initech")
    create(alice_api, name="Cleo Chen", email="cleo@globex.test", company="Globex")

    def names(search):
        return [c["name"] for c in alice_api.get("/contacts", {"search": search}).json()["contacts"]]

    assert names("ann") == ["Ann Example"]
    assert names("INITECH.test") == ["Bert Brown"]
    assert names("globex") == ["Cleo Chen"]
    assert names("") == ["Ann Example", "Bert Brown", "Cleo Chen"]
    assert names("nobody") == []


def test_the_list_is_paged_by_name(alice_api):
    for name in ("Eve", "Dan", "Cid", "Bea", "Abe"):
        create(alice_api, name=name, email=f"{name.lower()}@example.com")
    page = alice_api.get("/contacts", {"page": 2, "per_page": 2}).json()
    assert (page["total"], page["page"], page["per_page"]) == (5, 2, 2)
    assert [c["name"] for c in page["contacts"]] == ["Cid", "Dan"]
    assert alice_api.get("/contacts", {"page": 4, "per_page": 2}).json()["contacts"] == []
    assert alice_api.get("/contacts").json()["per_page"] == 50
    for bad in ({"per_page": 101}, {"per_page": 0}, {"page": 0}, {"page": "x"}):
        response = alice_api.get("/contacts", bad)
        assert response.status_code == 422 and set(response.json()) == {"detail", "errors"}


@pytest.mark.parametrize("fields, field", [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": None}, "name"),
    ({"email": "not-an-address"}, "email"),
    ({"email": ""}, "email"),
    ({"name": "x" * 256}, "name"),
    ({"phone": "1" * 65}, "phone"),
    ({"company": 12}, "company"),
    ({"groups": "Customers"}, "groups"),
    ({"groups": ["x" * 101]}, "groups"),
    ({"groups": [f"g{n}" for n in range(51)]}, "groups"),
    ({"notes": "x" * 10_001}, "notes"),
    ({"mailbox": "nobody@example.test"}, "mailbox"),
    ({"favourite": "yes"}, "favourite"),
    ({"id": 7}, "id"),
])
def test_bad_input_is_422_and_creates_nothing(alice_api, fields, field):
    response = create(alice_api, **fields)
    assert response.status_code == 422
    body = response.json()
    assert field in body["errors"] and body["detail"].startswith("Validation failed")
    assert Contact.objects.count() == 0


@pytest.mark.parametrize("missing", ["name", "email"])
def test_name_and_email_are_required(alice_api, missing):
    response = alice_api.post("/contacts", {k: v for k, v in ANN.items() if k != missing}, format="json")
    assert response.status_code == 422 and missing in response.json()["errors"]
    assert Contact.objects.count() == 0


@pytest.mark.parametrize("fields, field", [({"email": "nope"}, "email"), ({"name": ""}, "name"),
                                           ({"mailbox": "ann@example.test"}, "mailbox"), ({"uid": "x"}, "uid")])
def test_a_bad_patch_is_422_and_changes_nothing(alice_api, fields, field):
    contact = create(alice_api).json()
    before = Contact.objects.get()
    response = alice_api.patch(f"/contacts/{contact['id']}", fields, format="json")
    assert response.status_code == 422 and field in response.json()["errors"]
    after = Contact.objects.get()
    assert (after.name, after.email, after.etag, after.book_id) == (
        before.name, before.email, before.etag, before.book_id)


def test_a_free_plan_gets_403_naming_the_plan(charlie_api, charlie):
    for method, path in (("get", "/contacts"), ("post", "/contacts"), ("get", "/contacts/1"),
                         ("patch", "/contacts/1"), ("delete", "/contacts/1")):
        response = getattr(charlie_api, method)(path, ANN, format="json")
        assert response.status_code == 403, (method, path)
        assert response.json() == {
            "detail": "Contacts needs the Pro plan or a higher plan; your plan does not include it."}
    assert Contact.objects.count() == 0


def test_the_pro_plan_has_contacts(db):
    pro_api = login_client(UserFactory(account__plan_code="pro"))
    assert create(pro_api).status_code == 201


def test_keys_need_contacts_read_to_list_and_contacts_write_to_change(alice):
    contact = create(login_client(alice)).json()
    reader = key_client(alice, ["contacts:read"])
    assert reader.get("/contacts").status_code == 200
    assert reader.get(f"/contacts/{contact['id']}").status_code == 200
    for response in (create(reader), reader.patch(f"/contacts/{contact['id']}", {"name": "X"}, format="json"),
                     reader.delete(f"/contacts/{contact['id']}")):
        assert response.status_code == 403
        assert response.json() == {"detail": "This API key lacks the 'contacts:write' scope."}
    sender = key_client(alice, ["send", "calendar:read", "calendar:write"])
    for response in (sender.get("/contacts"), sender.get(f"/contacts/{contact['id']}"),
                     sender.head("/contacts")):
        assert response.status_code == 403
    assert sender.get("/contacts").json() == {"detail": "This API key lacks the 'contacts:read' scope."}
    writer = key_client(alice, ["contacts:write"])
    assert create(writer).status_code == 201
    assert writer.patch(f"/contacts/{contact['id']}", {"name": "Ann B"}, format="json").status_code == 200
    assert writer.delete(f"/contacts/{contact['id']}").status_code == 204
    assert list(Contact.objects.values_list("name", flat=True)) == ["Ann Example"]


def test_another_accounts_contact_is_404_and_unchanged(alice_api, dora_api):
    contact = create(alice_api).json()
    for method in ("get", "patch", "delete"):
        response = getattr(dora_api, method)(f"/contacts/{contact['id']}", {"name": "Mine now"}, format="json")
        assert response.status_code == 404
        assert set(response.json()) == {"detail"}
    assert dora_api.get("/contacts").json()["total"] == 0
    stored = Contact.objects.get()
    assert (stored.name, stored.email) == ("Ann Example", "ann@example.com")


def test_a_contact_can_go_to_a_mailboxes_own_book_and_be_listed_by_it(alice_api, alice, ann):
    in_mailbox = create(alice_api, name="Mailbox friend", mailbox="ANN@example.test")
    assert in_mailbox.status_code == 201, in_mailbox.json()
    assert in_mailbox.json()["mailbox"] == "ann@example.test"
    create(alice_api, name="Account friend")
    stored = Contact.objects.get(name="Mailbox friend")
    assert stored.book == AddressBook.objects.get(mailbox=ann)

    def names(**query):
        return [c["name"] for c in alice_api.get("/contacts", query).json()["contacts"]]

    assert names() == ["Account friend", "Mailbox friend"]
    assert names(mailbox="ann@example.test") == ["Mailbox friend"]
    response = alice_api.get("/contacts", {"mailbox": "nobody@example.test"})
    assert response.status_code == 422 and "mailbox" in response.json()["errors"]
    patched = alice_api.patch(f"/contacts/{stored.pk}", {"phone": "123"}, format="json").json()
    assert (patched["phone"], patched["mailbox"]) == ("123", "ann@example.test")


def test_another_accounts_mailbox_is_refused(alice_api, db):
    dora = UserFactory(account__plan_code="premium")
    make_mailbox(dora.account, "dora@elsewhere.test")
    response = create(alice_api, mailbox="dora@elsewhere.test")
    assert response.status_code == 422 and "mailbox" in response.json()["errors"]
    assert Contact.objects.count() == 0 and AddressBook.objects.count() == 0


def test_a_session_token_acts_with_every_scope(alice, api):
    token = api.post("/auth/login", {"email": alice.email, "password": PASSWORD}, format="json")
    assert token.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token.json()['token']}")
    assert create(api).status_code == 201
    assert api.get("/contacts").json()["total"] == 1


def test_an_empty_patch_changes_nothing(alice_api):
    contact = create(alice_api).json()
    before = Contact.objects.get()
    assert alice_api.patch(f"/contacts/{contact['id']}", {}, format="json").json() == contact
    after = Contact.objects.get()
    assert (after.etag, after.book.revision) == (before.etag, before.book.revision)


def test_huge_numbers_in_the_path_and_page_are_answered_plainly(alice_api):
    for method in ("get", "patch", "delete"):
        assert getattr(alice_api, method)("/contacts/9223372036854775808", {}, format="json").status_code == 404
    response = alice_api.get("/contacts", {"page": 99999999999999999999})
    assert response.status_code == 422 and "page" in response.json()["errors"]
