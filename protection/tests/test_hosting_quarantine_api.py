"""/v1/hosting/quarantine: the partner's view across its clients, release and delete."""
import pytest

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.store.factory import store_for
from protection.models import Quarantined, SenderRule
from protection.tests.conftest import client_mailbox, keep
from testkit.clients import key_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def hosting(alice, partner):
    return key_client(alice, list(PARTNER_SCOPES))


@pytest.fixture
def held(acme, globex):
    return keep(acme.mailbox, "Acme sale"), keep(globex.mailbox, "Globex sale")


def subjects(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [message["subject"] for message in response.json()["messages"]]


def test_the_partner_lists_every_client_s_quarantine_newest_first(hosting, held, acme):
    response = hosting.get("/v1/hosting/quarantine")

    assert subjects(response) == ["Globex sale", "Acme sale"]
    acme_item = response.json()["messages"][1]
    assert {key: acme_item[key] for key in ("id", "mailbox", "mailbox_id", "client_id", "status", "from", "score",
                                            "reasons", "virus")} == {
        "id": held[0].public_id, "mailbox": "ann@acme.test", "mailbox_id": acme.pk,
        "client_id": acme.mailbox.domain.client_id, "status": "waiting", "from": "Shop News <news@shop.test>",
        "score": 11.5, "reasons": ["Many people reported similar messages as spam."], "virus": None}
    assert response.json()["total"] == 2


def test_the_list_narrows_to_one_client_or_one_mailbox(hosting, held, acme, globex):
    assert subjects(hosting.get(f"/v1/hosting/quarantine?client_id={acme.mailbox.domain.client_id}")) == ["Acme sale"]
    assert subjects(hosting.get(f"/v1/hosting/quarantine?mailbox_id={globex.pk}")) == ["Globex sale"]


def test_one_message_shows_rspamd_s_symbols(hosting, held):
    response = hosting.get(f"/v1/hosting/quarantine/{held[0].public_id}")

    assert response.status_code == 200
    assert response.json()["symbols"] == {"BAYES_SPAM": {"score": 5.1}}


def test_release_delivers_to_the_inbox_and_can_allow_the_sender(hosting, held, acme):
    response = hosting.post(f"/v1/hosting/quarantine/{held[0].public_id}/release", {"allow_sender": True},
                            format="json")

    assert response.status_code == 200, response.content
    assert (response.json()["message"]["status"], response.json()["sender_allowed"]) == ("released", "news@shop.test")
    store = store_for(acme.mailbox)
    [summary] = store.list("INBOX").messages
    assert summary.subject == "Acme sale"
    assert b"X-Mailwell-Verdict" not in store.fetch("INBOX", summary.uid).raw
    assert SenderRule.objects.get(mailbox=acme.mailbox).kind == "allow"
    assert subjects(hosting.get("/v1/hosting/quarantine")) == ["Globex sale"]
    assert subjects(hosting.get("/v1/hosting/quarantine?status=released")) == ["Acme sale"]


def test_a_second_release_is_409_and_nothing_more_is_delivered(hosting, held, acme):
    hosting.post(f"/v1/hosting/quarantine/{held[0].public_id}/release", {}, format="json")

    response = hosting.post(f"/v1/hosting/quarantine/{held[0].public_id}/release", {}, format="json")

    assert response.status_code == 409
    assert store_for(acme.mailbox).list("INBOX").total == 1


def test_delete_forgets_the_message(hosting, held):
    response = hosting.delete(f"/v1/hosting/quarantine/{held[1].public_id}")

    assert response.status_code == 204
    assert subjects(hosting.get("/v1/hosting/quarantine")) == ["Acme sale"]
    assert bytes(Quarantined.objects.get(pk=held[1].pk).raw) == b""


def test_another_partner_gets_404_and_sees_nothing(charlie, held, embedded):
    from mailcore.partners.models import HostingPartner
    from mailcore.partners.services import hosting_partner_enable, slots_grant

    other = hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    slots_grant(partner=other, count=1)
    keep(client_mailbox(other, "Initech", "initech.test", "carl").mailbox, "Initech sale")
    stranger = key_client(charlie, list(PARTNER_SCOPES))

    assert subjects(stranger.get("/v1/hosting/quarantine")) == ["Initech sale"]
    assert stranger.get(f"/v1/hosting/quarantine/{held[0].public_id}").status_code == 404
    assert stranger.post(f"/v1/hosting/quarantine/{held[0].public_id}/release", {}, format="json").status_code == 404
    assert stranger.delete(f"/v1/hosting/quarantine/{held[0].public_id}").status_code == 404
    assert Quarantined.objects.get(pk=held[0].pk).is_waiting
