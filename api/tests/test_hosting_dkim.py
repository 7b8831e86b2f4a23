"""/v1/hosting/domains/{id}/dkim and /dkim-rotation, end to end on the loopback DNS with the clock
travelling: a rotation from start to retire (mail leaves signed with the old key until DNS has the
new one, then with the new one, each verified by dkimpy against the DNS), the old record kept a week
then listed as removable, the schedule, Ed25519 beside RSA, and the refusals (409, 404, 422)."""
import email
from datetime import UTC, datetime, timedelta
from email import policy

import dkim
import pytest
import time_machine

from billing.services.mailboxes import partner_mailbox_open
from rest_framework.test import APIClient

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.models import DkimKey
from mailcore.domains.rotation import dkim_rotation_sweep
from mailcore.events.models import Event
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.clients import key_client, new_key

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SENDER = "ann@acme.test"


@pytest.fixture
def clock():
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def partner(alice):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    slots_grant(partner=partner, count=1)
    return partner


@pytest.fixture
def hosting(alice, partner):
    return key_client(alice, list(PARTNER_SCOPES))


def publish(dns_zone, records: list[dict]) -> None:
    """What the partner does at the DNS provider: every record dns_records lists (TXT records on a
    name are the set listed for it)."""
    names: dict[tuple[str, str], list[str]] = {}
    for record in records:
        if "may be removed" in record["description"]:
            continue
        name = "acme.test" if record["host"] == "@" else f"{record['host']}.acme.test"
        names.setdefault((name, record["type"]), []).append(record["value"])
    for (name, rdtype), values in names.items():
        dns_zone.set(name, rdtype, *values)


@pytest.fixture
def acme(hosting, partner, dns_zone, clock):
    """acme.test claimed, every record published as the wizard asked, verified: dns_records null."""
    domain = hosting.post("/v1/hosting/domains", {"domain_name": "acme.test"}, format="json").json()
    publish(dns_zone, domain["dns_records"])
    verified = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert (verified["status"], verified["dns_records"]) == ("verified", None)
    partner_mailbox_open(partner=partner, domain=partner.account.domains.get(), local_part="ann",
                         password="mailbox-pass-1", plan_id="pro")
    return verified


def send_one(alice, relay, subject: str) -> bytes:
    """A message sent through /mail/send and dispatched to the relay: what left, signed."""
    api_key = new_key(alice, scopes=["send"])
    response = APIClient().post("/mail/send", {"from_email": SENDER, "to": ["bob@remote.test"], "subject": subject,
                                               "body_text": "Hi Bob"}, format="json", HTTP_X_API_KEY=api_key)
    assert response.status_code == 200, response.content
    assert outbound_dispatch_due() == 1
    return relay.messages[-1].content


def signatures(raw: bytes) -> list[dict[str, str]]:
    """Each DKIM-Signature's tags, top first."""
    message = email.message_from_bytes(raw, policy=policy.compat32)
    found = []
    for value in message.get_all("DKIM-Signature"):
        unfolded = "".join(value.split())
        found.append(dict(tag.split("=", 1) for tag in unfolded.split(";") if "=" in tag))
    return found


def verifies(raw: bytes, *, idx: int) -> bool:
    """dkimpy's verdict on the idx-th signature (dkim.verify checks only the first)."""
    try:
        return dkim.DKIM(raw).verify(idx=idx, dnsfunc=dkim_dnsfunc)
    except dkim.DKIMException:
        return False


def by_host(records: list[dict] | None) -> dict[str, dict]:
    return {record["host"]: record for record in records or []}


def dkim_of(hosting, domain_id: int) -> dict:
    return hosting.get(f"/v1/hosting/domains/{domain_id}/dkim").json()


def domain_of(hosting, domain_id: int) -> dict:
    return hosting.get(f"/v1/hosting/domains/{domain_id}").json()


def test_a_rotation_runs_from_start_to_retire_and_nothing_signs_with_a_key_dns_lacks(
        alice, hosting, acme, relay, dns_zone, clock):
    domain_id = acme["id"]
    before = send_one(alice, relay, "Before")
    assert [(sig["a"], sig["s"], sig["d"]) for sig in signatures(before)] == [("rsa-sha256", "dkim", "acme.test")]
    assert dkim.verify(before, dnsfunc=dkim_dnsfunc)

    # the partner starts a rotation: the new key is listed beside the current one, unchecked
    started = hosting.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    assert started.status_code == 201
    assert started.json()["rotation"] == "waiting_for_dns"
    assert [(key["selector"], key["state"]) for key in started.json()["keys"]] == [("dkim2", "pending"),
                                                                                   ("dkim", "active")]
    records = by_host(domain_of(hosting, domain_id)["dns_records"])
    new = records["dkim2._domainkey"]
    assert new["value"].startswith("v=DKIM1; k=rsa; p=") and new["ok"] is None
    assert new["description"].startswith("New key: publish it beside the current one")
    assert records["dkim._domainkey"]["ok"] is True
    assert {record["host"] for record in records.values()} == {
        "@", "_dmarc", "dkim._domainkey", "dkim2._domainkey", "_mta-sts", "mta-sts", "_smtp._tls", "track"}

    # a second start is a conflict and changes nothing
    again = hosting.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    assert again.status_code == 409
    assert "waiting to be seen in DNS" in again.json()["detail"]
    assert DkimKey.objects.filter(domain_name="acme.test").count() == 2

    # not published yet: the background check leaves it pending and the old key keeps signing
    clock.shift(timedelta(minutes=10))
    assert dkim_rotation_sweep() == 0
    waiting = send_one(alice, relay, "Waiting")
    assert [sig["s"] for sig in signatures(waiting)] == ["dkim"]
    assert dkim.verify(waiting, dnsfunc=dkim_dnsfunc)
    assert by_host(domain_of(hosting, domain_id)["dns_records"])["dkim2._domainkey"]["reason"] == "no DKIM record"

    # published: the next check switches signing, and says so
    dns_zone.set("dkim2._domainkey.acme.test", "TXT", new["value"])
    clock.shift(timedelta(minutes=10))
    assert dkim_rotation_sweep() == 1
    switched_at = START + timedelta(minutes=20)
    keep_until = switched_at + timedelta(days=7)
    [event] = Event.objects.filter(name="domain.dkim_rotated")
    assert event.data == {"domain": "acme.test", "algorithm": "rsa", "selector": "dkim2", "previous_selector": "dkim",
                          "switched_at": "2026-12-01T09:20:00Z", "previous_published_until": "2026-12-08T09:20:00Z"}
    after = send_one(alice, relay, "After")
    assert [sig["s"] for sig in signatures(after)] == ["dkim2"]
    assert dkim.verify(after, dnsfunc=dkim_dnsfunc)
    assert dkim.verify(waiting, dnsfunc=dkim_dnsfunc)  # mail signed before the switch still verifies

    state = dkim_of(hosting, domain_id)
    assert state["rotation"] == "keeping_old_key"
    assert [(key["selector"], key["state"], key["keep_until"]) for key in state["keys"]] == [
        ("dkim2", "active", None), ("dkim", "retiring", "2026-12-08T09:20:00Z")]
    records = by_host(domain_of(hosting, domain_id)["dns_records"])
    assert records["dkim2._domainkey"]["ok"] is True
    assert records["dkim2._domainkey"]["description"] == "Signs outgoing mail so receivers can trust it"
    assert records["dkim._domainkey"]["description"] == (
        "Previous key, no longer signing: keep until 8 Dec 2026 so mail signed with it still verifies")

    # too late to cancel; a new rotation waits until the old key is retired
    assert hosting.delete(f"/v1/hosting/domains/{domain_id}/dkim-rotation").status_code == 409
    busy = hosting.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    assert busy.status_code == 409 and "stays published until 2026-12-08T09:20:00Z" in busy.json()["detail"]

    # the old record stays listed for its week, then is retired and may be removed
    clock.move_to(keep_until - timedelta(minutes=1))
    assert dkim_rotation_sweep() == 0
    assert dkim_of(hosting, domain_id)["rotation"] == "keeping_old_key"
    clock.move_to(keep_until + timedelta(minutes=1))
    assert dkim_rotation_sweep() == 1
    state = dkim_of(hosting, domain_id)
    assert state["rotation"] == "none"
    assert [(key["selector"], key["state"]) for key in state["keys"]] == [("dkim2", "active"), ("dkim", "retired")]
    old = by_host(domain_of(hosting, domain_id)["dns_records"])["dkim._domainkey"]
    assert old["ok"] is True and old["description"].endswith("this record may be removed")
    still = send_one(alice, relay, "Still")
    assert [sig["s"] for sig in signatures(still)] == ["dkim2"] and dkim.verify(still, dnsfunc=dkim_dnsfunc)

    # a month on, the retired key is forgotten: every record is right again
    clock.shift(timedelta(days=31))
    dkim_rotation_sweep()
    assert domain_of(hosting, domain_id)["dns_records"] is None
    assert DkimKey.objects.get(domain_name="acme.test", selector="dkim").private_key_pem == ""


def test_a_rotation_can_be_cancelled_before_the_switch(hosting, acme, dns_zone, clock):
    domain_id = acme["id"]
    hosting.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    cancelled = hosting.delete(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    assert cancelled.status_code == 200
    assert cancelled.json()["rotation"] == "none"
    assert [(key["selector"], key["state"]) for key in cancelled.json()["keys"]] == [("dkim", "active")]
    assert domain_of(hosting, domain_id)["dns_records"] is None
    assert hosting.delete(f"/v1/hosting/domains/{domain_id}/dkim-rotation").status_code == 409


def test_check_dns_switches_signing_once_the_new_key_is_published(hosting, acme, dns_zone, clock):
    domain_id = acme["id"]
    hosting.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation")
    new = by_host(domain_of(hosting, domain_id)["dns_records"])["dkim2._domainkey"]
    dns_zone.set("dkim2._domainkey.acme.test", "TXT", new["value"])
    checked = hosting.post(f"/v1/hosting/domains/{domain_id}/verify").json()
    records = by_host(checked["dns_records"])
    assert records["dkim2._domainkey"]["ok"] is True and records["dkim._domainkey"]["ok"] is True
    assert records["dkim._domainkey"]["description"].startswith("Previous key, no longer signing")
    assert dkim_of(hosting, domain_id)["rotation"] == "keeping_old_key"


def test_the_schedule_starts_a_rotation_after_n_months(hosting, acme, clock):
    domain_id = acme["id"]
    response = hosting.patch(f"/v1/hosting/domains/{domain_id}/dkim", {"rotate_every_months": 3}, format="json")
    assert response.status_code == 200
    assert response.json()["rotate_every_months"] == 3
    assert response.json()["next_rotation_at"] == "2027-03-01T09:00:00Z"
    clock.move_to(datetime(2027, 3, 1, 8, 59, tzinfo=UTC))
    assert dkim_rotation_sweep() == 0
    assert dkim_of(hosting, domain_id)["rotation"] == "none"
    clock.move_to(datetime(2027, 3, 1, 9, 1, tzinfo=UTC))
    assert dkim_rotation_sweep() == 1
    state = dkim_of(hosting, domain_id)
    assert state["rotation"] == "waiting_for_dns"
    assert [(key["selector"], key["state"]) for key in state["keys"]] == [("dkim2", "pending"), ("dkim", "active")]
    assert dkim_rotation_sweep() == 0  # one rotation at a time


def test_ed25519_signs_beside_rsa_once_dns_has_it_and_dkimpy_verifies_both(alice, hosting, acme, relay, dns_zone,
                                                                          clock):
    domain_id = acme["id"]
    turned_on = hosting.patch(f"/v1/hosting/domains/{domain_id}/dkim", {"ed25519": True}, format="json").json()
    assert turned_on["ed25519"] is True
    assert [(key["selector"], key["algorithm"], key["state"]) for key in turned_on["keys"]] == [
        ("dkim", "rsa", "active"), ("dkimed", "ed25519", "pending")]
    ed = by_host(domain_of(hosting, domain_id)["dns_records"])["dkimed._domainkey"]
    assert ed["value"].startswith("v=DKIM1; k=ed25519; p=") and len(ed["value"]) == len("v=DKIM1; k=ed25519; p=") + 44

    unseen = send_one(alice, relay, "RSA only")
    assert [sig["a"] for sig in signatures(unseen)] == ["rsa-sha256"]  # DNS lacks it: it does not sign

    dns_zone.set("dkimed._domainkey.acme.test", "TXT", ed["value"])
    clock.shift(timedelta(minutes=5))
    assert dkim_rotation_sweep() == 1
    assert not Event.objects.filter(name="domain.dkim_rotated").exists()  # a key added, none replaced
    both = send_one(alice, relay, "Both")
    assert [(sig["a"], sig["s"]) for sig in signatures(both)] == [("rsa-sha256", "dkim"),
                                                                  ("ed25519-sha256", "dkimed")]
    assert dkim.verify(both, dnsfunc=dkim_dnsfunc)  # the RSA signature (the first)
    assert verifies(both, idx=1)  # the Ed25519 one
    assert not verifies(both.replace(b"Hi Bob", b"Hi Eve"), idx=1)

    turned_off = hosting.patch(f"/v1/hosting/domains/{domain_id}/dkim", {"ed25519": False}, format="json").json()
    assert [(key["selector"], key["state"]) for key in turned_off["keys"]] == [("dkim", "active"),
                                                                               ("dkimed", "retiring")]
    assert [sig["a"] for sig in signatures(send_one(alice, relay, "Off"))] == ["rsa-sha256"]


@pytest.mark.parametrize("months", [25, -1, "3", None, 2.5])
def test_a_bad_schedule_is_422_with_a_field_error_and_changes_nothing(hosting, acme, months):
    response = hosting.patch(f"/v1/hosting/domains/{acme['id']}/dkim", {"rotate_every_months": months},
                             format="json")
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["rotate_every_months"]
    assert dkim_of(hosting, acme["id"])["rotate_every_months"] == 0


def test_another_partners_domain_does_not_exist(acme, charlie, hosting):
    hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    charlies = key_client(charlie, list(PARTNER_SCOPES))
    domain_id = acme["id"]
    assert charlies.get(f"/v1/hosting/domains/{domain_id}/dkim").status_code == 404
    assert charlies.patch(f"/v1/hosting/domains/{domain_id}/dkim", {"rotate_every_months": 1},
                          format="json").status_code == 404
    assert charlies.post(f"/v1/hosting/domains/{domain_id}/dkim-rotation").status_code == 404
    assert charlies.delete(f"/v1/hosting/domains/{domain_id}/dkim-rotation").status_code == 404
    assert DkimKey.objects.filter(domain_name="acme.test").count() == 1
    assert dkim_of(hosting, domain_id)["rotate_every_months"] == 0


def test_the_schema_states_the_schedule_bounds(hosting):
    schema = hosting.get("/openapi.json").json()
    body = schema["components"]["schemas"]["PatchedDkimSettingsInputRequest"]["properties"]["rotate_every_months"]
    assert (body["minimum"], body["maximum"]) == (0, 24)
    assert "post" in schema["paths"]["/v1/hosting/domains/{domain_id}/dkim-rotation"]
