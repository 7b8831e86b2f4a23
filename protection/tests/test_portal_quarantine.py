"""The partner portal's quarantine page: held messages across clients, release and delete."""
import pytest

from mailcore.store.factory import store_for
from protection.models import Quarantined, SenderRule
from protection.tests.conftest import keep

pytestmark = pytest.mark.django_db


@pytest.fixture
def portal(client, alice, partner):
    client.force_login(alice)
    return client


def test_the_page_lists_every_client_s_held_messages_and_filters_by_client(portal, acme, globex):
    keep(acme.mailbox, "Acme sale", reasons=["The sender's domain is on a spam list."])
    keep(globex.mailbox, "Globex sale")

    page = portal.get("/portal/quarantine/").content.decode()
    only_acme = portal.get(f"/portal/quarantine/?client={acme.mailbox.domain.client_id}").content.decode()

    assert "Acme sale" in page and "Globex sale" in page and "ann@acme.test" in page and "Acme" in page
    assert "The sender&#x27;s domain is on a spam list." in page
    assert "Acme sale" in only_acme and "Globex sale" not in only_acme


def test_release_and_allow_from_the_portal(portal, acme):
    item = keep(acme.mailbox, "Acme sale")

    response = portal.post(f"/portal/quarantine/{item.public_id}/", {"action": "release_allow"}, follow=True)

    assert "is in ann@acme.test&#x27;s Inbox. news@shop.test is allowed" in response.content.decode()
    assert [s.subject for s in store_for(acme.mailbox).list("INBOX").messages] == ["Acme sale"]
    assert SenderRule.objects.get(mailbox=acme.mailbox).kind == "allow"


def test_delete_from_the_portal(portal, acme):
    item = keep(acme.mailbox, "Acme sale")

    portal.post(f"/portal/quarantine/{item.public_id}/", {"action": "delete"})

    assert not Quarantined.objects.get(pk=item.pk).is_waiting


def test_another_partner_gets_404(client, charlie, acme):
    item = keep(acme.mailbox, "Acme sale")
    from mailcore.partners.models import HostingPartner
    from mailcore.partners.services import hosting_partner_enable

    hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    client.force_login(charlie)

    assert "Acme sale" not in client.get("/portal/quarantine/").content.decode()
    assert client.post(f"/portal/quarantine/{item.public_id}/", {"action": "release"}).status_code == 404
    assert Quarantined.objects.get(pk=item.pk).is_waiting
