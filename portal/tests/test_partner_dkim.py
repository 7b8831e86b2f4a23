"""The DKIM card of a domain's page in the partner portal: its buttons start and cancel a key
rotation (the DNS records then list the new key to publish), its form sets the schedule and Ed25519
or refuses a bad value beside the field; another partner's domain is 404 and stays as it was."""
import html
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from mailcore.domains.dkim import dkim_public_record
from mailcore.domains.models import DkimKey, Domain
from mailcore.domains.rotation import dkim_rotation_sweep
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def domain(partner):
    with time_machine.travel(datetime(2026, 12, 1, 9, 0, tzinfo=UTC), tick=False):
        return domain_add_for_partner(partner=partner, name="acme.test")


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def page(client, domain):
    response = client.get(f"/portal/domains/{domain.pk}/")
    assert response.status_code == 200
    return response


def test_the_domain_page_shows_the_signing_key_and_a_rotate_button(alice_client, domain):
    response = page(alice_client, domain)
    body = response.content.decode()
    assert f'action="/portal/domains/{domain.pk}/dkim/rotate/"' in body and 'id="dkim-rotate"' in body
    assert 'id="dkim-cancel"' not in body
    assert "Signing No rotation running." in text(response)
    assert re.search(r'id="dkim-key-dkim">\s*<td class="mono">dkim</td>\s*<td>RSA 2048</td>\s*<td>Signing</td>', body)
    assert re.search(r'name="rotate_every_months" value="0"', body)


def test_rotating_lists_the_new_key_to_publish_and_offers_cancel_until_the_switch(alice_client, domain):
    response = alice_client.post(f"/portal/domains/{domain.pk}/dkim/rotate/", follow=True)
    shown = text(response)
    assert "Rotation started. Publish the new DKIM record (dkim2._domainkey) below" in shown
    assert "Rotation waiting for DNS Publish the new record dkim2._domainkey" in shown
    body = response.content.decode()
    assert 'id="record-dkim_next"' in body and "New signature key (DKIM rotation)" in shown
    new = DkimKey.objects.get(domain_name="acme.test", state="pending")
    assert re.search(r'id="record-dkim_next-host" type="text" value="dkim2._domainkey"', body)
    assert "k=rsa; p=" in body and new.selector == "dkim2"
    assert 'id="dkim-cancel"' in body and 'id="dkim-rotate"' not in body

    again = text(alice_client.post(f"/portal/domains/{domain.pk}/dkim/rotate/", follow=True))
    assert "Not started: a DKIM key rotation is already running" in again
    assert DkimKey.objects.filter(domain_name="acme.test").count() == 2

    cancelled = alice_client.post(f"/portal/domains/{domain.pk}/dkim/cancel/", follow=True)
    assert "Rotation cancelled. The current key keeps signing" in text(cancelled)
    assert 'id="record-dkim_next"' not in cancelled.content.decode()
    assert 'id="dkim-rotate"' in cancelled.content.decode()
    assert list(DkimKey.objects.filter(domain_name="acme.test").values_list("selector", "state")) == [
        ("dkim", "active")]


def test_the_schedule_and_ed25519_are_saved_and_shown(alice_client, domain):
    with time_machine.travel(datetime(2026, 12, 2, 10, 0, tzinfo=UTC), tick=False):
        response = alice_client.post(f"/portal/domains/{domain.pk}/dkim/",
                                     {"rotate_every_months": "6", "ed25519": "on"}, follow=True)
    shown = text(response)
    assert "DKIM settings of acme.test saved." in shown
    assert "The next one starts on 1 Jun 2027" in shown
    assert "New Ed25519 signature key (DKIM)" in shown
    assert re.search(r'id="dkim-key-dkimed">\s*<td class="mono">dkimed</td>\s*<td>Ed25519</td>\s*'
                     r'<td>Waiting to be seen in DNS</td>', response.content.decode())
    saved = Domain.objects.get(pk=domain.pk)
    assert (saved.dkim_rotate_every_months, saved.dkim_ed25519) == (6, True)


def test_a_schedule_out_of_range_is_refused_beside_its_field_and_changes_nothing(alice_client, domain):
    response = alice_client.post(f"/portal/domains/{domain.pk}/dkim/", {"rotate_every_months": "25"})
    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 24." in text(response)
    saved = Domain.objects.get(pk=domain.pk)
    assert (saved.dkim_rotate_every_months, saved.dkim_ed25519) == (0, False)


def test_another_partners_domain_is_404_and_stays_as_it_was(client, domain):
    dora = UserFactory(email="dora@example.test", account__plan_code="premium")
    hosting_partner_enable(account=dora.account, status=HostingPartner.Status.ACTIVE)
    client.force_login(dora)
    for tail, data in (("dkim/rotate/", {}), ("dkim/cancel/", {}), ("dkim/", {"rotate_every_months": "1"})):
        assert client.post(f"/portal/domains/{domain.pk}/{tail}", data).status_code == 404
    assert DkimKey.objects.filter(domain_name="acme.test").count() == 1
    assert Domain.objects.get(pk=domain.pk).dkim_rotate_every_months == 0


def test_after_the_switch_the_page_says_until_when_to_keep_the_old_record_then_that_it_may_be_removed(
        alice_client, domain, dns_zone):
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False) as clock:
        alice_client.post(f"/portal/domains/{domain.pk}/dkim/rotate/")
        new = DkimKey.objects.get(domain_name="acme.test", state="pending")
        dns_zone.set("dkim2._domainkey.acme.test", "TXT", dkim_public_record(new))
        clock.shift(timedelta(minutes=5))
        assert dkim_rotation_sweep() == 1
        switched = page(alice_client, domain)
        assert "Switched Mail is signed with the new key. Keep the old record dkim._domainkey until 8 Dec 2026" in (
            text(switched))
        assert "Previous key, no longer signing: keep until 8 Dec 2026" in text(switched)
        assert 'id="dkim-rotate"' not in switched.content.decode()

        clock.shift(timedelta(days=7))
        assert dkim_rotation_sweep() == 1
        retired = page(alice_client, domain)
        assert re.search(r'id="record-dkim_removable".*?Status: </span>May be removed', retired.content.decode(),
                         re.S)
        assert "Retired signature key (DKIM)" in text(retired)
        assert 'id="dkim-rotate"' in retired.content.decode()
