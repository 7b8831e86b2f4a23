"""/labels, and labels on messages (IMAP keywords)."""
import pytest

from mailcore.mailboxes.models import Label
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db

ADDRESS = "inbox@example.test"


def test_create_and_list_labels(alice_api):
    response = alice_api.post("/labels", {"name": "Invoices", "color": "#1A73E8"}, format="json")
    assert response.status_code == 201
    created = response.json()
    assert (created["name"], created["color"]) == ("Invoices", "#1a73e8")
    assert [label["id"] for label in alice_api.get("/labels").json()] == [created["id"]]


@pytest.mark.parametrize("payload, field", [({"name": "x", "color": "blue"}, "color"), ({"name": "x", "color": "#12345"}, "color"),
                                            ({"color": "#123456"}, "name"), ({"name": "", "color": "#123456"}, "name")])
def test_a_bad_label_is_422_and_creates_nothing(alice_api, payload, field):
    response = alice_api.post("/labels", payload, format="json")
    assert response.status_code == 422
    assert field in response.json()["errors"]
    assert Label.objects.count() == 0


def test_a_duplicate_name_is_422(alice_api):
    alice_api.post("/labels", {"name": "Work", "color": "#123456"}, format="json")
    assert alice_api.post("/labels", {"name": "Work", "color": "#654321"}, format="json").status_code == 422


def test_labels_go_on_messages_filter_the_list_and_vanish_with_the_label(alice_api, alice):
    mailbox = make_mailbox(alice.account, ADDRESS)
    store = store_for(mailbox)
    tagged, other = store.append("INBOX", make_message("tagged")), store.append("INBOX", make_message("other"))
    label = alice_api.post("/labels", {"name": "Work", "color": "#123456"}, format="json").json()
    patched = alice_api.patch(f"/inbox/{tagged}?email={ADDRESS}", {"labels": [label["id"]]}, format="json").json()
    assert patched["labels"] == [label["id"]]
    listed = alice_api.get("/inbox", {"email": ADDRESS, "label": label["id"]}).json()
    assert [m["uid"] for m in listed["messages"]] == [tagged]
    assert listed["messages"][0]["labels"] == [label["id"]]
    assert alice_api.get(f"/inbox/{other}", {"email": ADDRESS}).json()["labels"] == []
    assert alice_api.delete(f"/labels/{label['id']}").status_code == 204
    assert f"$label{label['id']}" not in store.fetch("INBOX", tagged).flags
    assert Label.objects.count() == 0


def test_an_unknown_label_on_a_message_is_422(alice_api, alice, charlie):
    mailbox = make_mailbox(alice.account, ADDRESS)
    uid = store_for(mailbox).append("INBOX", make_message())
    foreign = Label.objects.create(account=charlie.account, name="theirs", color="#000000")
    response = alice_api.patch(f"/inbox/{uid}?email={ADDRESS}", {"labels": [foreign.pk]}, format="json")
    assert response.status_code == 422
    assert store_for(mailbox).fetch("INBOX", uid).flags == ()


def test_another_accounts_label_is_404(alice_api, charlie_api):
    label = alice_api.post("/labels", {"name": "Mine", "color": "#123456"}, format="json").json()
    assert charlie_api.delete(f"/labels/{label['id']}").status_code == 404
    assert charlie_api.get("/labels").json() == []
    assert Label.objects.count() == 1
