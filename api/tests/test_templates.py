"""/mail/templates: paginated list, create, fetch, PATCH, delete; sharing within an account."""
import pytest

from testkit.clients import login_client
from mailcore.sending.models import MailTemplate

pytestmark = pytest.mark.django_db


def create(client, **fields):
    return client.post("/mail/templates", {"name": "Welcome", "subject": "Hi {{name}}", "body_html": "<p>Hi</p>",
                                           **fields}, format="json")


def test_create_fetch_update_delete(alice_api):
    created = create(alice_api)
    assert created.status_code == 201
    template = created.json()
    assert {k: template[k] for k in ("name", "subject", "body_html", "is_shared")} == {
        "name": "Welcome", "subject": "Hi {{name}}", "body_html": "<p>Hi</p>", "is_shared": False}
    assert alice_api.get(f"/mail/templates/{template['id']}").json()["name"] == "Welcome"
    patched = alice_api.patch(f"/mail/templates/{template['id']}", {"subject": "Hello"}, format="json").json()
    assert (patched["subject"], patched["body_html"]) == ("Hello", "<p>Hi</p>")
    assert alice_api.delete(f"/mail/templates/{template['id']}").status_code == 204
    assert alice_api.get(f"/mail/templates/{template['id']}").status_code == 404


def test_the_list_is_paginated(alice_api):
    for n in range(5):
        create(alice_api, name=f"T{n}")
    page = alice_api.get("/mail/templates", {"page": 2, "per_page": 2}).json()
    assert (page["total"], page["page"], page["per_page"]) == (5, 2, 2)
    assert [t["name"] for t in page["templates"]] == ["T2", "T1"]
    assert alice_api.get("/mail/templates", {"per_page": 101}).status_code == 422


@pytest.mark.parametrize("fields, field", [({"name": ""}, "name"), ({"body_html": ""}, "body_html"),
                                           ({"is_shared": "perhaps"}, "is_shared")])
def test_bad_input_is_422(alice_api, fields, field):
    response = create(alice_api, **fields)
    assert response.status_code == 422 and field in response.json()["errors"]
    assert MailTemplate.objects.count() == 0


def test_a_teammate_sees_shared_templates_only(alice_api, bob):
    private = create(alice_api, name="Private").json()
    shared = create(alice_api, name="Shared", is_shared=True).json()
    bob_api = login_client(bob)
    assert [t["id"] for t in bob_api.get("/mail/templates").json()["templates"]] == [shared["id"]]
    assert bob_api.get(f"/mail/templates/{private['id']}").status_code == 404


def test_another_accounts_template_is_404(alice_api, charlie_api):
    template = create(alice_api, is_shared=True).json()
    for method in ("get", "patch", "delete"):
        assert getattr(charlie_api, method)(f"/mail/templates/{template['id']}", {"name": "x"}, format="json").status_code == 404
    assert MailTemplate.objects.get().name == "Welcome"
