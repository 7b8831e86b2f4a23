"""/v1/hosting/mailboxes/{id}: forwarding rules (confirmed by the target through a signed link),
aliases and identity; and that inbound mail honours them."""
import re
from datetime import timedelta
from email import message_from_bytes

import pytest
import time_machine
from django.core import mail, signing
from django.utils import timezone

from testkit.clients import key_client
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.models import Domain
from mailcore.inbound.delivery import deliver
from mailcore.mailboxes.models import Alias, ForwardingRule, Mailbox
from mailcore.outbound.srs import srs_forward
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.services import slots_grant
from mailcore.sending.compose import build_message
from mailcore.store.factory import store_for
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

ALL = list(PARTNER_SCOPES)
BASE = "http://testserver"
CONFIRM_LINK = re.compile(re.escape(BASE) + r"(/v1/hosting/forwarding/confirm/\S+)")


@pytest.fixture(autouse=True)
def embedded(settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    settings.PUBLIC_BASE_URL = BASE


def partner_mailbox(user, domain_name: str, local_part: str):
    partner = hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    domain = Domain.objects.filter(name=domain_name).first() or make_domain(user.account, domain_name)
    slots_grant(partner=partner, count=1)
    return partner_mailbox_open(partner=partner, domain=domain, local_part=local_part, password="mailbox-pass-1",
                                  plan_id="pro")


@pytest.fixture
def client_box(alice):
    """alice's hosted client mailbox ann@acme.test (the partner mailbox record)."""
    return partner_mailbox(alice, "acme.test", "ann")


@pytest.fixture
def hosting(alice, client_box):
    return key_client(alice, ALL)


@pytest.fixture
def other_partner(charlie):
    """charlie, another hosting partner, with his own mailbox and a key with every partner scope."""
    partner_mailbox(charlie, "charlie.test", "carl")
    return key_client(charlie, ALL)


def url(partner_mailbox, tail: str = "") -> str:
    return f"/v1/hosting/mailboxes/{partner_mailbox.pk}/{tail}"


def rule_record(rule: ForwardingRule) -> dict:
    return {"id": rule.pk, "email": "ann@acme.test", "forward_to": rule.forward_to, "keep_copy": rule.keep_copy,
            "enabled": rule.enabled, "confirmed": rule.confirmed_at is not None,
            "confirmed_at": rule.confirmed_at.isoformat().replace("+00:00", "Z") if rule.confirmed_at else None,
            "created_at": rule.created_at.isoformat().replace("+00:00", "Z")}


def add_rule(hosting, client_box, forward_to="far@elsewhere.test", **fields) -> dict:
    response = hosting.post(url(client_box, "forwarding"), {"email": "ann@acme.test", "forward_to": forward_to, **fields},
                            format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def confirm_path(message) -> str:
    return CONFIRM_LINK.search(message.body).group(1)


# forwarding


def test_confirmation_mails_are_limited_per_account_with_429_and_nothing_added(hosting, client_box, settings):
    settings.FORWARDING_CONFIRMATIONS_PER_HOUR = 1
    add_rule(hosting, client_box, forward_to="first@elsewhere.test")

    refused = hosting.post(url(client_box, "forwarding"),
                           {"email": "ann@acme.test", "forward_to": "second@elsewhere.test"}, format="json")

    assert refused.status_code == 429 and int(refused["Retry-After"]) > 3500
    assert refused.json()["detail"].startswith("At most 1 forwarding confirmations an hour.")
    assert [rule.forward_to for rule in ForwardingRule.objects.all()] == ["first@elsewhere.test"]
    assert [sent.to for sent in mail.outbox] == [["first@elsewhere.test"]]


def test_a_new_rule_is_unconfirmed_and_mails_the_target_a_confirmation_link(hosting, client_box):
    created = add_rule(hosting, client_box, forward_to="Far@Elsewhere.test", keep_copy=False)
    rule = ForwardingRule.objects.get()
    assert created == rule_record(rule)
    assert (created["forward_to"], created["keep_copy"], created["enabled"], created["confirmed"]) == (
        "far@elsewhere.test", False, True, False)
    [sent] = mail.outbox
    assert sent.to == ["far@elsewhere.test"]
    assert sent.subject == "Confirm forwarding from ann@acme.test"
    assert confirm_path(sent).startswith("/v1/hosting/forwarding/confirm/")
    assert hosting.get(url(client_box, "forwarding")).json() == [created]


def test_keep_copy_defaults_to_true(hosting, client_box):
    assert add_rule(hosting, client_box)["keep_copy"] is True


@pytest.mark.parametrize("payload, field", [
    ({"email": "bea@acme.test", "forward_to": "far@elsewhere.test"}, "email"),
    ({"forward_to": "far@elsewhere.test"}, "email"),
    ({"email": "ann@acme.test"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "not-an-address"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": '"two words"@elsewhere.test'}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "far@[10.0.0.1]"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "ANN@acme.test"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "ann+loop@acme.test"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "sales@acme.test"}, "forward_to"),
    ({"email": "ann@acme.test", "forward_to": "far@elsewhere.test", "keep_copy": "maybe"}, "keep_copy"),
])
def test_a_bad_rule_is_422_creates_nothing_and_sends_nothing(hosting, client_box, payload, field):
    Alias.objects.create(mailbox=client_box.mailbox, address="sales@acme.test")
    response = hosting.post(url(client_box, "forwarding"), payload, format="json")
    assert response.status_code == 422
    assert list(response.json()["errors"]) == [field]
    assert ForwardingRule.objects.count() == 0
    assert mail.outbox == []


def test_a_second_rule_to_the_same_target_is_422(hosting, client_box):
    add_rule(hosting, client_box)
    mail.outbox.clear()
    response = hosting.post(url(client_box, "forwarding"), {"email": "ann@acme.test", "forward_to": "FAR@elsewhere.test"},
                            format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {"forward_to": ["this mailbox already forwards to that address"]}
    assert ForwardingRule.objects.count() == 1
    assert mail.outbox == []


def test_a_rule_whose_confirmation_cannot_be_sent_is_502_and_not_kept(hosting, client_box, settings):
    from testkit.smtp_sink import free_port

    settings.MAILERS = {"default": {"BACKEND": "mailcore.outbound.systemmail.SignedRelayBackend"}}
    settings.SMTP_URL = f"smtp://127.0.0.1:{free_port()}"  # nobody listens: the relay defers it
    response = hosting.post(url(client_box, "forwarding"), {"email": "ann@acme.test", "forward_to": "far@elsewhere.test"},
                            format="json")
    assert response.status_code == 502
    assert "could not be sent" in response.json()["detail"]
    assert ForwardingRule.objects.count() == 0


def test_a_rule_is_switched_off_and_on_and_deleted(hosting, client_box):
    created = add_rule(hosting, client_box)
    off = hosting.patch(url(client_box, f"forwarding/{created['id']}"), {"enabled": False}, format="json")
    assert off.status_code == 200
    assert off.json() == {**created, "enabled": False}
    assert hosting.patch(url(client_box, f"forwarding/{created['id']}"), {"enabled": True}, format="json").json() == created
    assert hosting.delete(url(client_box, f"forwarding/{created['id']}")).status_code == 204
    assert ForwardingRule.objects.count() == 0
    assert hosting.get(url(client_box, "forwarding")).json() == []


@pytest.mark.parametrize("payload", [{}, {"enabled": None}, {"enabled": "sometimes"}])
def test_an_update_without_a_boolean_enabled_is_422_and_changes_nothing(hosting, client_box, payload):
    created = add_rule(hosting, client_box)
    response = hosting.patch(url(client_box, f"forwarding/{created['id']}"), payload, format="json")
    assert response.status_code == 422
    assert "enabled" in response.json()["errors"]
    assert ForwardingRule.objects.get().enabled is True


def test_a_rule_of_another_mailbox_is_404_through_this_one(hosting, alice, client_box):
    bea = partner_mailbox(alice, "acme.test", "bea")
    created = add_rule(hosting, client_box)
    assert hosting.patch(url(bea, f"forwarding/{created['id']}"), {"enabled": False}, format="json").status_code == 404
    assert hosting.delete(url(bea, f"forwarding/{created['id']}")).status_code == 404
    assert hosting.get(url(bea, "forwarding")).json() == []
    assert ForwardingRule.objects.get().enabled is True


# the confirmation link


def test_the_link_shows_a_page_that_confirms_only_when_posted(hosting, client_box, api):
    created = add_rule(hosting, client_box)
    path = confirm_path(mail.outbox[0])

    page = api.get(path)
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    assert page["Referrer-Policy"] == "no-referrer"
    html = page.content.decode()
    assert "ann@acme.test asks to forward its mail to far@elsewhere.test" in html
    assert '<form method="post">' in html
    assert ForwardingRule.objects.get().confirmed_at is None

    confirmed = api.post(path)
    assert confirmed.status_code == 200
    assert "Mail to ann@acme.test is forwarded to far@elsewhere.test." in confirmed.content.decode()
    rule = ForwardingRule.objects.get()
    assert rule.confirmed_at is not None
    assert hosting.get(url(client_box, "forwarding")).json() == [
        {**created, "confirmed": True, "confirmed_at": rule.confirmed_at.isoformat().replace("+00:00", "Z")}]


def test_confirming_twice_keeps_the_first_confirmation(hosting, client_box, api):
    add_rule(hosting, client_box)
    path = confirm_path(mail.outbox[0])
    api.post(path)
    first = ForwardingRule.objects.get().confirmed_at
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        again = api.post(path)
    assert again.status_code == 200
    assert ForwardingRule.objects.get().confirmed_at == first
    assert "<form" not in api.get(path).content.decode()


def test_a_tampered_link_is_400_and_confirms_nothing(hosting, client_box, api):
    add_rule(hosting, client_box)
    path = confirm_path(mail.outbox[0])
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    for method in (api.get, api.post):
        response = method(tampered)
        assert response.status_code == 400
        assert response["Content-Type"].startswith("text/html")
        assert "unknown or tampered confirmation link" in response.content.decode()
    assert ForwardingRule.objects.get().confirmed_at is None


def test_a_token_signed_for_something_else_is_400(hosting, client_box, api):
    created = add_rule(hosting, client_box)
    foreign = signing.dumps({"rule": created["id"], "mailbox": client_box.mailbox_id, "to": "far@elsewhere.test"},
                            salt="mailwell.tracking.click")
    assert api.post(f"/v1/hosting/forwarding/confirm/{foreign}").status_code == 400
    assert ForwardingRule.objects.get().confirmed_at is None


def test_a_link_older_than_seven_days_is_400_and_confirms_nothing(hosting, client_box, api):
    add_rule(hosting, client_box)
    path = confirm_path(mail.outbox[0])
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        response = api.post(path)
    assert response.status_code == 400
    assert "expired" in response.content.decode()
    assert ForwardingRule.objects.get().confirmed_at is None


def test_the_link_of_a_deleted_rule_confirms_nothing_even_after_the_target_is_added_again(hosting, client_box, api):
    first = add_rule(hosting, client_box)
    old_path = confirm_path(mail.outbox[0])
    hosting.delete(url(client_box, f"forwarding/{first['id']}"))
    add_rule(hosting, client_box)
    response = api.post(old_path)
    assert response.status_code == 400
    assert "no longer exists" in response.content.decode()
    assert ForwardingRule.objects.get().confirmed_at is None


# aliases


def test_an_alias_is_created_listed_and_deleted(hosting, client_box):
    response = hosting.post(url(client_box, "aliases"), {"mailbox": "ANN@acme.test", "alias_address": " Sales@ACME.test "},
                            format="json")
    assert response.status_code == 201
    alias = Alias.objects.get()
    record = {"id": alias.pk, "mailbox": "ann@acme.test", "alias_address": "sales@acme.test",
              "created_at": alias.created_at.isoformat().replace("+00:00", "Z")}
    assert response.json() == record
    assert hosting.get(url(client_box, "aliases")).json() == {"aliases": [record], "total": 1, "page": 1, "page_size": 20}
    assert hosting.delete(url(client_box, f"aliases/{alias.pk}")).status_code == 204
    assert Alias.objects.count() == 0


def test_aliases_come_a_page_at_a_time_in_address_order(hosting, client_box):
    for local_part in ("c", "a", "b"):
        Alias.objects.create(mailbox=client_box.mailbox, address=f"{local_part}@acme.test")
    first = hosting.get(url(client_box, "aliases"), {"page_size": 2}).json()
    second = hosting.get(url(client_box, "aliases"), {"page_size": 2, "page": 2}).json()
    past = hosting.get(url(client_box, "aliases"), {"page_size": 2, "page": 3}).json()
    assert [a["alias_address"] for a in first["aliases"]] == ["a@acme.test", "b@acme.test"]
    assert (first["total"], first["page"], first["page_size"]) == (3, 1, 2)
    assert [a["alias_address"] for a in second["aliases"]] == ["c@acme.test"]
    assert (past["aliases"], past["total"]) == ([], 3)


def test_a_page_size_of_100_is_allowed(hosting, client_box):
    assert hosting.get(url(client_box, "aliases"), {"page_size": 100}).json()["page_size"] == 100


@pytest.mark.parametrize("query, field", [({"page_size": 101}, "page_size"), ({"page_size": 0}, "page_size"),
                                          ({"page": 0}, "page"), ({"page": "two"}, "page")])
def test_a_bad_page_is_422(hosting, client_box, query, field):
    response = hosting.get(url(client_box, "aliases"), query)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == [field]


@pytest.mark.parametrize("payload, field", [
    ({"mailbox": "bea@acme.test", "alias_address": "sales@acme.test"}, "mailbox"),
    ({"alias_address": "sales@acme.test"}, "mailbox"),
    ({"mailbox": "ann@acme.test"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": "sales"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": "sa les@acme.test"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": "ann+sales@acme.test"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": ".sales@acme.test"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": "sales@elsewhere.test"}, "alias_address"),
    ({"mailbox": "ann@acme.test", "alias_address": "sales@charlie.test"}, "alias_address"),
])
def test_a_bad_alias_is_422_and_creates_nothing(hosting, client_box, other_partner, payload, field):
    response = hosting.post(url(client_box, "aliases"), payload, format="json")
    assert response.status_code == 422
    assert list(response.json()["errors"]) == [field]
    assert Alias.objects.count() == 0


def test_an_alias_on_another_domain_of_the_same_account_is_allowed(hosting, alice, client_box):
    make_domain(alice.account, "acme-mail.test")
    response = hosting.post(url(client_box, "aliases"), {"mailbox": "ann@acme.test", "alias_address": "ann@acme-mail.test"},
                            format="json")
    assert response.status_code == 201


@pytest.mark.parametrize("address", ["bea@acme.test", "ann@acme.test", "sales@acme.test"])
def test_an_address_a_mailbox_or_alias_already_has_is_409(hosting, alice, client_box, address):
    partner_mailbox(alice, "acme.test", "bea")
    Alias.objects.create(mailbox=client_box.mailbox, address="sales@acme.test")
    response = hosting.post(url(client_box, "aliases"), {"mailbox": "ann@acme.test", "alias_address": address},
                            format="json")
    assert response.status_code == 409
    assert response.json() == {"detail": f"{address} is already in use"}
    assert list(Alias.objects.values_list("address", flat=True)) == ["sales@acme.test"]


def test_an_alias_of_another_mailbox_is_404_through_this_one(hosting, alice, client_box):
    bea = partner_mailbox(alice, "acme.test", "bea")
    alias = Alias.objects.create(mailbox=client_box.mailbox, address="sales@acme.test")
    assert hosting.delete(url(bea, f"aliases/{alias.pk}")).status_code == 404
    assert hosting.get(url(bea, "aliases")).json()["total"] == 0
    assert Alias.objects.count() == 1


# identity


def test_identity_is_read_and_the_signature_is_sanitized(hosting, client_box):
    assert hosting.get(url(client_box, "identity")).json() == {"display_name": "", "signature_html": ""}
    response = hosting.patch(url(client_box, "identity"), {
        "display_name": " Ann Example ",
        "signature_html": '<p onclick="steal()">Ann <b>Example</b></p><script>alert(1)</script>',
    }, format="json")
    expected = {"display_name": "Ann Example", "signature_html": "<p>Ann <b>Example</b></p>"}
    assert response.status_code == 200
    assert response.json() == expected
    assert hosting.get(url(client_box, "identity")).json() == expected
    mailbox = Mailbox.objects.get(pk=client_box.mailbox_id)
    assert (mailbox.display_name, mailbox.signature_html) == ("Ann Example", "<p>Ann <b>Example</b></p>")


def test_a_field_left_out_keeps_its_value(hosting, client_box):
    hosting.patch(url(client_box, "identity"), {"display_name": "Ann", "signature_html": "<p>Ann</p>"}, format="json")
    assert hosting.patch(url(client_box, "identity"), {"display_name": "Ann E."}, format="json").json() == {
        "display_name": "Ann E.", "signature_html": "<p>Ann</p>"}


@pytest.mark.parametrize("payload, field", [({"display_name": "Ann\r\nBcc: x@evil.test"}, "display_name"),
                                            ({"display_name": "x" * 201}, "display_name"),
                                            ({"signature_html": "x" * 10_001}, "signature_html")])
def test_a_bad_identity_is_422_and_changes_nothing(hosting, client_box, payload, field):
    response = hosting.patch(url(client_box, "identity"), payload, format="json")
    assert response.status_code == 422
    assert list(response.json()["errors"]) == [field]
    mailbox = Mailbox.objects.get(pk=client_box.mailbox_id)
    assert (mailbox.display_name, mailbox.signature_html) == ("", "")


def test_outgoing_mail_carries_the_identity(hosting, client_box):
    hosting.patch(url(client_box, "identity"), {"display_name": "Ann Example", "signature_html": "<p>Ann at Acme</p>"},
                  format="json")
    raw = build_message(mailbox=Mailbox.objects.get(pk=client_box.mailbox_id),
                        payload={"to": ["far@elsewhere.test"], "subject": "Hi", "body_html": "<p>Hello</p>"},
                        message_id="m1", rfc_message_id="<m1@acme.test>", track_opens=False)
    message = message_from_bytes(raw)
    assert message["From"] == "Ann Example <ann@acme.test>"
    html = next(part for part in message.walk() if part.get_content_type() == "text/html").get_payload(decode=True)
    assert b'<div class="signature">-- <br><p>Ann at Acme</p></div>' in html


# access


ENDPOINTS = [("get", "forwarding"), ("post", "forwarding"), ("patch", "forwarding/{rule}"),
             ("delete", "forwarding/{rule}"), ("get", "aliases"), ("post", "aliases"), ("delete", "aliases/{alias}"),
             ("get", "identity"), ("patch", "identity")]


@pytest.fixture
def objects(client_box):
    rule = ForwardingRule.objects.create(mailbox=client_box.mailbox, forward_to="far@elsewhere.test")
    alias = Alias.objects.create(mailbox=client_box.mailbox, address="sales@acme.test")
    return {"rule": rule.pk, "alias": alias.pk}


def call(client, method, partner_mailbox, tail, objects):
    payloads = {"post forwarding": {"email": "ann@acme.test", "forward_to": "new@elsewhere.test"},
                "post aliases": {"mailbox": "ann@acme.test", "alias_address": "new@acme.test"},
                "patch identity": {"display_name": "Taken over"}}
    body = payloads.get(f"{method} {tail}", {"enabled": False} if method == "patch" else None)
    return getattr(client, method)(url(partner_mailbox, tail.format(**objects)), body, format="json")


def unchanged(client_box):
    rule, alias, mailbox = ForwardingRule.objects.get(), Alias.objects.get(), Mailbox.objects.get(pk=client_box.mailbox_id)
    return (rule.enabled, alias.address, mailbox.display_name) == (True, "sales@acme.test", "")


@pytest.mark.parametrize("method, tail", ENDPOINTS)
def test_another_partner_gets_404_everywhere_and_changes_nothing(other_partner, client_box, objects, method, tail):
    assert call(other_partner, method, client_box, tail, objects).status_code == 404
    assert unchanged(client_box)
    assert mail.outbox == []


@pytest.mark.parametrize("method, tail", ENDPOINTS)
def test_a_key_without_the_mailbox_scope_is_403(alice, client_box, objects, method, tail):
    scope = "partner:mailboxes:write" if method == "get" else "partner:mailboxes:read"
    response = call(key_client(alice, [scope]), method, client_box, tail, objects)
    assert response.status_code == 403
    assert response.json()["detail"] == (
        f"This API key lacks the '{'partner:mailboxes:read' if method == 'get' else 'partner:mailboxes:write'}' scope.")
    assert unchanged(client_box)


def test_a_read_key_reads_everything(alice, client_box, objects):
    reader = key_client(alice, ["partner:mailboxes:read"])
    for tail in ("forwarding", "aliases", "identity"):
        assert reader.get(url(client_box, tail)).status_code == 200


def test_an_account_that_is_not_a_partner_gets_403(charlie_api, client_box, objects):
    response = charlie_api.get(url(client_box, "forwarding"))
    assert response.status_code == 403
    assert "not a hosting partner" in response.json()["detail"]


# inbound mail honours rules and aliases


def raw_message(to="ann@acme.test", subject="Lunch?") -> bytes:
    return (f"From: Bea <bea@sender.test>\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: <{subject}@sender.test>\r\n"
            "Date: Wed, 04 Mar 2026 05:00:00 +0000\r\n\r\nSee you at noon.\r\n").encode()


def outbox(tmp_path) -> list[bytes]:
    folder = tmp_path / "outbox"
    return [path.read_bytes() for path in sorted(folder.iterdir())] if folder.exists() else []


def inbox_subjects(partner_mailbox) -> list[str]:
    return sorted(summary.subject for summary in store_for(partner_mailbox.mailbox).list("INBOX").messages)


def test_mail_forwards_only_while_the_rule_is_enabled_and_confirmed(hosting, client_box, api, tmp_path):
    created = add_rule(hosting, client_box)

    assert deliver(raw_message(subject="unconfirmed"), "ann@acme.test", "bea@sender.test").forwarded_to == ()
    assert outbox(tmp_path) == []

    api.post(confirm_path(mail.outbox[0]))
    result = deliver(raw_message(subject="live"), "ann@acme.test", "bea@sender.test")
    assert (result.forwarded_to, result.stored) == (("far@elsewhere.test",), True)
    [forwarded] = outbox(tmp_path)
    srs = srs_forward("bea@sender.test", "acme.test").encode()  # bounces come back for the sender
    assert forwarded.startswith(b"X-Outbox-Envelope-From: <" + srs + b">\r\n"
                                b"X-Outbox-Envelope-To: <far@elsewhere.test>\r\n")
    assert b"Subject: live" in forwarded

    hosting.patch(url(client_box, f"forwarding/{created['id']}"), {"enabled": False}, format="json")
    assert deliver(raw_message(subject="switched off"), "ann@acme.test", "bea@sender.test").forwarded_to == ()
    assert len(outbox(tmp_path)) == 1
    assert inbox_subjects(client_box) == ["live", "switched off", "unconfirmed"]


def test_without_keep_copy_a_live_rule_leaves_nothing_in_the_mailbox(hosting, client_box, api, tmp_path):
    add_rule(hosting, client_box, keep_copy=False)
    api.post(confirm_path(mail.outbox[0]))
    result = deliver(raw_message(subject="away"), "ann@acme.test", "bea@sender.test")
    assert (result.forwarded_to, result.stored) == (("far@elsewhere.test",), False)
    assert len(outbox(tmp_path)) == 1
    assert inbox_subjects(client_box) == []


def test_an_alias_receives_mail_into_its_mailbox_until_deleted(hosting, client_box):
    created = hosting.post(url(client_box, "aliases"), {"mailbox": "ann@acme.test", "alias_address": "sales@acme.test"},
                           format="json").json()
    result = deliver(raw_message(to="sales@acme.test", subject="order"), "sales@acme.test", "bea@sender.test")
    assert (result.reply, result.mailbox, result.stored) == ("250 2.0.0 Delivered", "ann@acme.test", True)
    assert inbox_subjects(client_box) == ["order"]

    hosting.delete(url(client_box, f"aliases/{created['id']}"))
    gone = deliver(raw_message(to="sales@acme.test", subject="late"), "sales@acme.test", "bea@sender.test")
    assert gone.reply == "550 5.1.1 No such user here"
    assert inbox_subjects(client_box) == ["order"]


def test_deleting_a_domain_removes_its_aliases_so_a_later_owner_gets_none(db, alice):
    from mailcore.partners.services import hosting_partner_enable
    from mailcore.partners.domains import domain_delete
    from mailcore.mailboxes.models import Alias
    from testkit.factories import make_domain, make_mailbox

    hosting_partner_enable(account=alice.account)
    mailbox = make_mailbox(alice.account, "keeper@kept.test")
    spare = make_domain(alice.account, "spare.test")
    Alias.objects.create(mailbox=mailbox, address="hello@spare.test")
    domain_delete(domain=spare)
    assert not Alias.objects.filter(address="hello@spare.test").exists()
