"""Connected mailboxes as an account sees them through the API: ownership proved by a code mailed
to the address (or at once on the account's own verified domain), never an address hosted here,
mail sent through the provider's own submission server, servers reached only at public addresses
with short waits and never quoted, attempts throttled, and disconnecting.

Dovecot plays the other provider's IMAP server, aiosmtpd with AUTH its submission server; the
hostile servers (a banner, silence, a drip) are plain sockets on loopback.
"""
import asyncio
import imaplib
import re
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta
from types import SimpleNamespace

import pytest
import time_machine
from aiosmtpd.smtp import AuthResult
from django.core import mail
from django.db import connection as db_connection
from django.utils import timezone

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.fieldcrypt import encrypt
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.models import ConnectionVerification, Mailbox
from mailcore.mailboxes.selectors import mailbox_reached_by
from mailcore.mailboxes.services import mailbox_create
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.clients import login_client
from testkit.factories import UserFactory, make_mailbox
from testkit.smtp_sink import SinkHandler, inbound_listener, smtp_sink

FAR_AWAY = {"imap_host": "imap.far-away.test", "username": "me", "password": "secret"}


# servers that misbehave


@contextmanager
def tcp_server(serve):
    """A TCP server on 127.0.0.1 running `serve(connection)` for each client; yields (port, accepted)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def loop():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(client)
            threading.Thread(target=serve, args=(client, stop), daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        listener.close()
        for client in accepted:
            client.close()


def banner(client, stop):
    client.sendall(b"220 secret-relay.internal ESMTP Postfix (Debian/GNU) build 3.7.11\r\n")
    stop.wait(5)


def silence(client, stop):
    stop.wait(30)


def drip(client, stop):
    for byte in b"* OK IMAP4rev1 ready and waiting for you":
        if stop.wait(0.3):
            return
        try:
            client.sendall(bytes([byte]))
        except OSError:
            return


# the refusal: nothing hosted here is ever connected


@pytest.fixture
def alice_hosts(alice, ann):
    """alice's example.test holds ann@ with the alias info@."""
    alias_create(mailbox=ann, alias_address="info@example.test")
    return ann


@pytest.mark.parametrize("address", ["ann@example.test", "info@example.test", "ann+billing@example.test",
                                     "INFO@Example.test", "nobody-here@example.test"])
def test_a_stranger_cannot_connect_an_address_of_another_tenants_domain(charlie_api, charlie, alice_hosts, address):
    response = charlie_api.post("/mailboxes/connected", {"email": address, **FAR_AWAY}, format="json")
    assert response.status_code == 422
    # One answer for the mailbox, its alias, its subaddress and an address nobody has: it tells nothing.
    assert response.json() == {
        "detail": "Validation failed: email: this address cannot be connected here; an address on a domain hosted "
                  "here is used through its own mailbox",
        "errors": {"email": ["this address cannot be connected here; an address on a domain hosted here is used "
                             "through its own mailbox"]}}
    assert not Mailbox.objects.filter(account=charlie.account).exists()
    assert not ConnectionVerification.objects.exists() and mail.outbox == []


def test_the_account_that_hosts_an_address_cannot_connect_it_over_its_own_mailbox(alice_api, alice_hosts):
    for address in ("ann@example.test", "info@example.test", "ann+news@example.test"):
        response = alice_api.post("/mailboxes/connected", {"email": address, **FAR_AWAY}, format="json")
        assert response.status_code == 422 and "cannot be connected here" in response.json()["errors"]["email"][0]
    assert list(Mailbox.objects.values_list("address", flat=True)) == ["ann@example.test"]


@pytest.mark.django_db(transaction=True)
def test_an_address_connected_elsewhere_never_stands_in_the_way_of_its_real_host(plans, settings, tmp_path):
    """charlie really had me@later.test at another provider and connected it; later alice hosts
    later.test here: she creates the address and an alias, and mail to them reaches her mailbox
    (the listener runs in other threads: committed data)."""
    settings.MAIL_STORE, settings.SMTP_URL, settings.DATA_DIR = "embedded", "", tmp_path
    alice, charlie = UserFactory(account__plan_code="premium"), UserFactory(account__plan_code="free")
    Mailbox.objects.create(account=charlie.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                           address="me@later.test", imap_host="imap.elsewhere.test", imap_port=993,
                           imap_username="me")
    Mailbox.objects.create(account=charlie.account, kind=Mailbox.Kind.CONNECTED, local_part="sales",
                           address="sales@later.test", imap_host="imap.elsewhere.test", imap_port=993,
                           imap_username="sales")
    domain = domain_mark_verified(domain=domain_create(account=alice.account, name="later.test"))
    mine = mailbox_create(domain=domain, local_part="me", password="a good password 1")  # no 409
    alias_create(mailbox=mine, alias_address="sales@later.test")
    assert mailbox_reached_by("sales@later.test") == mine and mailbox_reached_by("me+x@later.test") == mine
    import smtplib

    with inbound_listener() as port, smtplib.SMTP("127.0.0.1", port) as client:
        refused = client.sendmail("bea@sender.test", ["sales@later.test"],
                                  b"From: bea@sender.test\r\nSubject: For sales\r\n\r\nhi\r\n")
    assert refused == {}
    alice_api = login_client(alice)
    listing = alice_api.get("/inbox", {"email": "me@later.test"}).json()
    assert [m["subject"] for m in listing["messages"]] == ["For sales"]


# ownership by a code mailed to the address


@pytest.fixture
def provider(plans, imap_settings, settings):
    """The other provider: Dovecot holds the remote mailbox, whose login the owner gives us."""
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    account = Account.objects.create(name="Provider", plan=Plan.objects.get(code="pro"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"p{uuid.uuid4().hex[:10]}.test"))
    remote = mailbox_create(domain=domain, local_part="me", password="remote password 1")
    imap = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port)
    imap.login(remote.address, "remote password 1")
    imap.append("INBOX", "", imaplib.Time2Internaldate(0),
                b"From: x@y.test\r\nSubject: At the other provider\r\n\r\nhello\r\n")
    imap.logout()
    return SimpleNamespace(connect={"imap_host": imap_settings.host, "imap_port": imap_settings.imap_port,
                                    "imap_tls": False, "username": remote.address, "password": "remote password 1"})


@pytest.fixture
def submission(provider):
    """The provider's submission server: AUTH required, one login accepted."""
    logins = []

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = (auth_data.login, auth_data.password) == (b"me-at-provider", b"smtp password 1")
        if ok:
            logins.append(auth_data.login.decode())
        return AuthResult(success=ok, handled=False)  # a refusal answers 535

    options = {"authenticator": authenticator, "auth_required": True, "auth_require_tls": False}
    with smtp_sink(server_options=options) as (port, sink):
        sink.port, sink.logins = port, logins
        yield sink


def code_in(message) -> str:
    return re.search(r"^    (\d{8})$", message.body, re.M).group(1)


def test_a_mailbox_is_connected_once_the_code_mailed_to_its_address_comes_back(provider):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    address = f"me@c{uuid.uuid4().hex[:10]}.test"
    pending = api.post("/mailboxes/connected", {"email": address, **provider.connect}, format="json")
    assert pending.status_code == 202, pending.json()
    assert pending.json()["email"] == address and pending.json()["status"] == "pending"
    assert pending.json()["attempts_left"] == 5
    [sent] = mail.outbox
    assert sent.to == [address] and code_in(sent) in sent.subject
    # Until then it is no mailbox: not listed, not readable, nothing sent from it.
    assert api.get("/mailboxes").json() == []
    assert api.get("/inbox", {"email": address}).status_code == 404
    send = api.post("/mail/send", {"from_email": address, "to": ["x@y.test"], "subject": "Hi", "body_text": "x"},
                    format="json")
    assert send.status_code == 422 and "from_email" in send.json()["errors"]

    wrong = "00000000" if code_in(sent) != "00000000" else "11111111"
    refused = api.post("/mailboxes/connected/confirm", {"email": address, "code": wrong}, format="json")
    assert refused.status_code == 422 and refused.json()["errors"] == {"code": ["wrong code; 4 tries left"]}
    assert not Mailbox.objects.filter(address=address).exists()

    confirmed = api.post("/mailboxes/connected/confirm", {"email": address, "code": code_in(sent)}, format="json")
    assert confirmed.status_code == 201, confirmed.json()
    assert confirmed.json()["email"] == address and confirmed.json()["kind"] == "connected"
    stored = Mailbox.objects.get(pk=confirmed.json()["id"])
    assert "remote password 1" not in stored.imap_password_encrypted
    assert not ConnectionVerification.objects.exists()
    assert [m["email"] for m in api.get("/mailboxes").json()] == [address]
    listing = api.get("/inbox", {"email": address}).json()
    assert [m["subject"] for m in listing["messages"]] == ["At the other provider"]
    again = api.post("/mailboxes/connected/confirm", {"email": address, "code": code_in(sent)}, format="json")
    assert again.status_code == 422  # a code works once


def test_five_wrong_codes_or_thirty_minutes_end_the_wait(provider):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    address = f"me@c{uuid.uuid4().hex[:10]}.test"
    assert api.post("/mailboxes/connected", {"email": address, **provider.connect}, format="json").status_code == 202
    code = code_in(mail.outbox[-1])
    wrong = str((int(code) + 1) % 10 ** 8).zfill(8)
    answers = [api.post("/mailboxes/connected/confirm", {"email": address, "code": wrong}, format="json").json()
               for _ in range(5)]
    assert [a["errors"]["code"][0] for a in answers] == [
        "wrong code; 4 tries left", "wrong code; 3 tries left", "wrong code; 2 tries left", "wrong code; 1 try left",
        "wrong code, and no tries are left; connect the mailbox again for a new code"]
    late = api.post("/mailboxes/connected/confirm", {"email": address, "code": code}, format="json")
    assert late.status_code == 422 and not Mailbox.objects.filter(address=address).exists()

    assert api.post("/mailboxes/connected", {"email": address, **provider.connect}, format="json").status_code == 202
    code = code_in(mail.outbox[-1])
    with time_machine.travel(timezone.now() + timedelta(minutes=31)):
        expired = api.post("/mailboxes/connected/confirm", {"email": address, "code": code}, format="json")
    assert expired.status_code == 422 and "expired" in expired.json()["errors"]["code"][0]
    assert not Mailbox.objects.filter(address=address).exists()


def test_on_its_own_verified_domain_an_account_connects_at_once_and_sends_through_the_relay_with_quota(
        provider, relay):
    owner = UserFactory(account__plan_code="pro")
    domain = domain_mark_verified(domain=domain_create(account=owner.account, name=f"o{uuid.uuid4().hex[:10]}.test"))
    api = login_client(owner)
    address = f"desk@{domain.name}"
    connected = api.post("/mailboxes/connected", {"email": address, **provider.connect}, format="json")
    assert connected.status_code == 201, connected.json()
    assert mail.outbox == []  # the verified domain is the proof
    sent = api.post("/mail/send", {"from_email": address, "to": ["x@y.test"], "subject": "From the desk",
                                   "body_text": "hello"}, format="json")
    assert sent.status_code == 200, sent.json()
    assert outbound_dispatch_due() == 1
    [received] = relay.messages
    assert received.mail_from == address and b"DKIM-Signature:" in received.content
    usage = api.get("/mail/mailbox-usage", {"email": address}).json()
    assert usage["emails_today"]["sent"] == 1


def test_a_send_from_a_connected_mailbox_goes_through_its_providers_submission_server(provider, submission, relay):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    address = f"me@c{uuid.uuid4().hex[:10]}.test"
    body = {"email": address, **provider.connect, "smtp_host": "127.0.0.1", "smtp_port": submission.port,
            "smtp_security": "none", "smtp_username": "me-at-provider", "smtp_password": "smtp password 1"}
    assert api.post("/mailboxes/connected", body, format="json").status_code == 202
    assert submission.logins == ["me-at-provider"]  # checked at connect time
    confirmed = api.post("/mailboxes/connected/confirm", {"email": address, "code": code_in(mail.outbox[-1])},
                         format="json")
    assert confirmed.status_code == 201
    sent = api.post("/mail/send", {"from_email": address, "to": ["friend@elsewhere.test"], "subject": "Via my provider",
                                   "body_text": "hello"}, format="json")
    assert sent.status_code == 200, sent.json()
    assert outbound_dispatch_due() == 1
    [received] = submission.messages
    assert received.mail_from == address and received.rcpt_tos == ["friend@elsewhere.test"]
    assert b"Subject: Via my provider" in received.content and b"DKIM-Signature:" not in received.content
    assert relay.messages == []  # never the platform relay for a domain this account has not verified
    assert submission.logins == ["me-at-provider", "me-at-provider"]
    usage = api.get("/mail/mailbox-usage", {"email": address}).json()
    assert usage["emails_today"]["sent"] == 0  # its provider's quota, not ours


def test_a_connected_mailbox_without_a_submission_server_cannot_send_from_a_foreign_domain(provider, relay):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    address = f"me@c{uuid.uuid4().hex[:10]}.test"
    api.post("/mailboxes/connected", {"email": address, **provider.connect}, format="json")
    api.post("/mailboxes/connected/confirm", {"email": address, "code": code_in(mail.outbox[-1])}, format="json")
    sent = api.post("/mail/send", {"from_email": address, "to": ["x@y.test"], "subject": "Hi", "body_text": "x"},
                    format="json")
    assert sent.status_code == 422
    assert "connect it again with smtp_host" in sent.json()["errors"]["from_email"][0]
    assert outbound_dispatch_due() == 0 and relay.messages == []


def test_a_wrong_submission_login_is_refused_at_connect_time_in_our_words(provider, submission):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    body = {"email": f"me@c{uuid.uuid4().hex[:10]}.test", **provider.connect, "smtp_host": "127.0.0.1",
            "smtp_port": submission.port, "smtp_security": "none", "smtp_username": "me-at-provider",
            "smtp_password": "wrong"}
    response = api.post("/mailboxes/connected", body, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {"smtp_password": ["the SMTP server at 127.0.0.1 refused this username and "
                                                           "password"]}
    assert mail.outbox == [] and not ConnectionVerification.objects.exists()


# the servers named: public addresses only, short waits, never quoted


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]", "0.0.0.0"])
def test_internal_hosts_are_refused_without_a_connection(charlie_api, settings, host):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = False
    with tcp_server(banner) as (port, accepted):
        response = charlie_api.post("/mailboxes/connected", {
            "email": "me@elsewhere.test", "imap_host": host, "imap_port": port, "imap_tls": False,
            "username": "me", "password": "secret"}, format="json")
        time.sleep(0.2)
    assert response.status_code == 422
    [message] = response.json()["errors"]["imap_host"]
    assert "cannot be used: give the name of a mail server reachable on the public internet" in message
    assert message == (f"{host.strip('[]')} cannot be used: give the name of a mail server reachable on the public "
                       "internet")
    assert accepted == []


@pytest.mark.parametrize("field", ["imap_host", "smtp_host"])
def test_what_a_server_says_is_never_repeated(charlie_api, settings, field):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    with tcp_server(banner) as (port, accepted):
        body = {"email": "me@elsewhere.test", "imap_host": "127.0.0.1", "imap_port": port, "imap_tls": False,
                "username": "me", "password": "secret"}
        if field == "smtp_host":
            with tcp_server(silence) as (silent_port, _):
                settings.CONNECTED_MAILBOX_CHECK_SECONDS = 1
                body = {**body, "imap_port": silent_port, "smtp_host": "127.0.0.1", "smtp_port": port,
                        "smtp_security": "none", "smtp_password": "wrong"}
                response = charlie_api.post("/mailboxes/connected", body, format="json")
        else:
            response = charlie_api.post("/mailboxes/connected", body, format="json")
    assert response.status_code == 422
    text = response.content.decode()
    assert "secret-relay" not in text and "Postfix" not in text and "220" not in text
    assert len(accepted) == 1
    if field == "imap_host":
        assert response.json()["errors"] == {"imap_host": [f"no IMAP server answered at 127.0.0.1:{port}"]}


@pytest.mark.parametrize("serve", [silence, drip], ids=["silent", "dripping"])
def test_a_server_that_stalls_holds_the_request_only_a_few_seconds(charlie_api, settings, serve):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    settings.CONNECTED_MAILBOX_CHECK_SECONDS = 1
    charlie_api.get("/mailboxes")  # the process's first request loads what every request needs: not timed
    with tcp_server(serve) as (port, accepted):
        started = time.monotonic()
        response = charlie_api.post("/mailboxes/connected", {
            "email": "me@elsewhere.test", "imap_host": "127.0.0.1", "imap_port": port, "imap_tls": False,
            "username": "me", "password": "secret"}, format="json")
        waited = time.monotonic() - started
    assert response.status_code == 422 and len(accepted) == 1
    assert response.json()["errors"] == {"imap_host": [f"no IMAP server answered at 127.0.0.1:{port}"]}
    assert waited < 3  # a 1-second deadline, not the 20 s workers were held


def test_a_connected_provider_that_stalls_later_holds_a_read_only_for_the_session_deadline(charlie, charlie_api,
                                                                                            settings):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    settings.CONNECTED_MAILBOX_CHECK_SECONDS, settings.CONNECTED_MAILBOX_SESSION_SECONDS = 1, 1
    with tcp_server(drip) as (port, accepted):
        Mailbox.objects.create(account=charlie.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                               address="me@elsewhere.test", imap_host="127.0.0.1", imap_port=port, imap_tls=False,
                               imap_username="me", imap_password_encrypted=encrypt("secret"))
        charlie_api.get("/mailboxes")  # warm: not timed
        started = time.monotonic()
        response = charlie_api.get("/inbox", {"email": "me@elsewhere.test"})
        waited = time.monotonic() - started
    assert response.status_code == 502 and len(accepted) == 1
    assert "IMAP4rev1" not in response.content.decode()
    assert waited < 3  # a 1-second deadline, not the 20 s workers were held


def test_connection_attempts_are_limited_per_account(charlie_api, alice_api, settings):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    settings.CONNECTED_MAILBOX_CHECKS_PER_HOUR = 2
    with tcp_server(banner) as (port, accepted):
        body = {"email": "me@elsewhere.test", "imap_host": "127.0.0.1", "imap_port": port, "imap_tls": False,
                "username": "me", "password": "secret"}
        answers = [charlie_api.post("/mailboxes/connected", body, format="json") for _ in range(3)]
        others = alice_api.post("/mailboxes/connected", body, format="json")
        time.sleep(0.2)
    assert [a.status_code for a in answers] == [422, 422, 429]
    assert answers[2].json()["detail"].startswith("At most 2 mailbox connection attempts an hour.")
    assert int(answers[2]["Retry-After"]) > 3000
    assert others.status_code == 422  # another account has its own allowance
    assert len(accepted) == 3  # the refused attempt never reached the server


def test_codes_mailed_are_limited_per_account(provider, settings):
    settings.CONNECTED_MAILBOX_CODES_PER_HOUR = 1
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    first = api.post("/mailboxes/connected", {"email": f"a@c{uuid.uuid4().hex[:8]}.test", **provider.connect},
                     format="json")
    second = api.post("/mailboxes/connected", {"email": f"b@c{uuid.uuid4().hex[:8]}.test", **provider.connect},
                      format="json")
    assert (first.status_code, second.status_code) == (202, 429)
    assert len(mail.outbox) == 1 and ConnectionVerification.objects.count() == 1


def test_connections_never_confirmed_are_forgotten_with_their_logins(charlie):
    from mailcore.fieldcrypt import encrypt as seal
    from mailcore.sweep import job_named, job_run

    now = timezone.now()
    for address, expires_at in (("old@elsewhere.test", now - timedelta(minutes=1)),
                                ("new@elsewhere.test", now + timedelta(minutes=10))):
        ConnectionVerification.objects.create(account=charlie.account, address=address, settings_encrypted=seal("{}"),
                                              code_hash="x", expires_at=expires_at)
    assert job_run(job_named("purge-expired-connection-codes")) == 1
    assert list(ConnectionVerification.objects.values_list("address", flat=True)) == ["new@elsewhere.test"]


# disconnecting


def test_a_connected_mailbox_is_disconnected_by_its_account_only(charlie, charlie_api, alice_api, ann):
    mine = Mailbox.objects.create(account=charlie.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                                  address="me@elsewhere.test", imap_host="imap.elsewhere.test", imap_port=993,
                                  imap_username="me")
    assert alice_api.delete(f"/mailboxes/connected/{mine.pk}").status_code == 404
    assert charlie_api.delete(f"/mailboxes/connected/{ann.pk}").status_code == 404  # another's, hosted
    assert alice_api.delete(f"/mailboxes/connected/{ann.pk}").status_code == 404  # hosted: not this call's
    assert Mailbox.objects.count() == 2
    assert charlie_api.delete(f"/mailboxes/connected/{mine.pk}").status_code == 204
    assert list(Mailbox.objects.values_list("address", flat=True)) == ["ann@example.test"]
    assert charlie_api.get("/mailboxes").json() == []


# the same policy for webhooks


def test_a_webhook_to_an_internal_name_is_refused_without_saying_what_it_resolves_to(alice_api, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    endpoint = alice_api.post("/webhooks", {"url": "https://localhost:8443/hook", "events": ["email.received"]},
                              format="json").json()
    test = alice_api.post(f"/webhooks/{endpoint['id']}/test").json()
    assert test["delivered"] is False
    assert test["error"] == "localhost does not resolve to a public address"


def test_the_openapi_schema_states_the_connect_confirm_and_disconnect_calls(api):
    paths = api.get("/openapi.json").json()["paths"]
    connect = paths["/mailboxes/connected"]["post"]
    assert {"201", "202", "422", "429", "4XX"} <= set(connect["responses"])
    assert set(paths["/mailboxes/connected/confirm"]["post"]["responses"]) >= {"201", "422"}
    assert "204" in paths["/mailboxes/connected/{mailbox_id}"]["delete"]["responses"]
    schema = api.get("/openapi.json").json()["components"]["schemas"]
    connect_input = schema[connect["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]]
    assert schema["SmtpSecurityEnum"]["enum"] == ["starttls", "tls", "none"]
    assert connect_input["properties"]["smtp_security"]["allOf"] == [{"$ref": "#/components/schemas/SmtpSecurityEnum"}]
    assert set(connect_input["required"]) == {"email", "imap_host", "username", "password"}


# a provider's submission server that stalls holds no one else's mail


def connected_sender(account, port: int, address: str = "me@elsewhere.test") -> Mailbox:
    """A connected mailbox of `account` whose submission server listens on loopback at `port`."""
    return Mailbox.objects.create(account=account, kind=Mailbox.Kind.CONNECTED, local_part=address.split("@")[0],
                                  address=address, imap_host="127.0.0.1", imap_port=1, imap_tls=False,
                                  imap_username="me", imap_password_encrypted=encrypt("secret"),
                                  smtp_host="127.0.0.1", smtp_port=port, smtp_security="none",
                                  smtp_username="me", smtp_password_encrypted=encrypt("secret"))


def smtp_drip(client, stop):
    """An SMTP server that greets one byte at a time, forever."""
    for byte in b"220 " + b"x" * 1000:
        if stop.wait(0.2):
            return
        try:
            client.sendall(bytes([byte]))
        except OSError:
            return


@pytest.mark.parametrize("serve", [silence, smtp_drip])
def test_a_stalling_submission_server_holds_its_own_message_only_and_only_for_the_send_deadline(
        charlie, charlie_api, alice_api, ann, relay, settings, serve):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    settings.CONNECTED_MAILBOX_SEND_SECONDS = 1
    with tcp_server(serve) as (port, accepted):
        connected_sender(charlie.account, port)
        stuck = charlie_api.post("/mail/send", {"from_email": "me@elsewhere.test", "to": ["x@y.test"],
                                                "subject": "Through my provider", "body_text": "x"}, format="json")
        assert stuck.status_code == 200, stuck.json()
        hosted = alice_api.post("/mail/send", {"from_email": "ann@example.test", "to": ["x@y.test"],
                                               "subject": "Through the platform", "body_text": "x"}, format="json")
        assert hosted.status_code == 200, hosted.json()
        started = time.monotonic()
        assert outbound_dispatch_due() == 2
        waited = time.monotonic() - started
    assert waited < 8  # one second for the stalled provider, not 60 s a step
    assert [m.mail_from for m in relay.messages] == ["ann@example.test"]  # alice's mail left all the same
    row = Mailbox.objects.get(address="me@elsewhere.test").outbound_messages.get()
    assert row.status == "queued" and row.last_error == f"x@y.test: 451 4.4.1 Submission server 127.0.0.1:{port} unavailable (no SMTP server answered)"
    assert "x" * 10 not in row.last_error and len(accepted) == 1


def test_sends_through_connected_providers_are_limited_per_account_and_hour(charlie, charlie_api, alice_api, ann,
                                                                             settings):
    settings.CONNECTED_MAILBOX_SENDS_PER_HOUR = 2
    connected_sender(charlie.account, 2525)
    send = {"from_email": "me@elsewhere.test", "to": ["x@y.test"], "subject": "Hi", "body_text": "x"}
    assert [charlie_api.post("/mail/send", send, format="json").status_code for _ in range(2)] == [200, 200]
    refused = charlie_api.post("/mail/send", send, format="json")
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert refused.json()["detail"].startswith("At most 2 messages sent through connected mailboxes' own servers "
                                               "an hour.")
    assert Mailbox.objects.get(address="me@elsewhere.test").outbound_messages.count() == 2  # nothing stored
    sandbox = charlie_api.post("/mail/send", {**send, "sandbox": True}, format="json")
    assert sandbox.status_code == 200  # nothing leaves: nothing counted
    own = alice_api.post("/mail/send", {**send, "from_email": "ann@example.test"}, format="json")
    assert own.status_code == 200  # another account, its own mail under its quota


class StallFirst(SinkHandler):
    """A relay that holds its first message until `release` is set (a worker stuck on a slow hop)."""

    def __init__(self):
        super().__init__()
        self.stalled, self.release = threading.Event(), threading.Event()

    async def handle_DATA(self, server, session, envelope):
        if not self.stalled.is_set():
            self.stalled.set()
            while not self.release.is_set():
                await asyncio.sleep(0.05)
        return await super().handle_DATA(server, session, envelope)


@pytest.mark.django_db(transaction=True)
def test_a_message_whose_claim_lapsed_while_its_worker_was_stuck_is_sent_once(plans, settings):
    owner = UserFactory(account__plan_code="pro")
    make_mailbox(owner.account, "desk@lapse.test")
    api = login_client(owner)
    for subject in ("First", "Second"):
        sent = api.post("/mail/send", {"from_email": "desk@lapse.test", "to": ["x@y.test"], "subject": subject,
                                       "body_text": "x"}, format="json")
        assert sent.status_code == 200, sent.json()
    with smtp_sink(handler=StallFirst()) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        def stuck_worker():
            try:
                outbound_dispatch_due()
            finally:
                db_connection.close()

        stuck = threading.Thread(target=stuck_worker)
        stuck.start()
        assert sink.stalled.wait(10)  # the first worker is stuck handing over "First"
        with time_machine.travel(timezone.now() + timedelta(minutes=6)):  # its claims lapsed
            assert outbound_dispatch_due() == 2  # a second worker sends both
            sink.release.set()
            stuck.join(10)
    subjects = [re.search(rb"^Subject: (\w+)", m.content, re.M).group(1) for m in sink.messages]
    # "First" was on the wire when the claim lapsed; "Second" is never handed over by the stuck worker.
    assert sorted(subjects) == [b"First", b"First", b"Second"]
    assert Event.objects.filter(name="email.sent").count() == 2  # each message announced once


# reads of a connected mailbox: names resolved within a limit, sessions counted, responses capped


def test_a_providers_name_is_resolved_through_our_nameservers_within_the_dns_timeout(provider, dns_zone, settings):
    charlie = UserFactory(account__plan_code="free")
    api = login_client(charlie)
    dns_zone.set("imap.provider-x.test", "A", "127.0.0.1")
    body = {"email": f"me@c{uuid.uuid4().hex[:10]}.test", **provider.connect, "imap_host": "imap.provider-x.test"}
    assert provider.connect["imap_host"] == "127.0.0.1"
    answered = api.post("/mailboxes/connected", body, format="json")
    assert answered.status_code == 202, answered.json()  # found through DNS_NAMESERVERS, reached at its address

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent_nameserver:
        silent_nameserver.bind(("127.0.0.1", 0))
        settings.DNS_NAMESERVERS = [f"127.0.0.1:{silent_nameserver.getsockname()[1]}"]
        settings.DNS_TIMEOUT_SECONDS = 1
        started = time.monotonic()
        refused = api.post("/mailboxes/connected", {**body, "email": f"me@c{uuid.uuid4().hex[:10]}.test"},
                           format="json")
        waited = time.monotonic() - started
    assert refused.status_code == 422
    assert refused.json()["errors"] == {"imap_host": ["imap.provider-x.test cannot be used: give the name of a mail "
                                                      "server reachable on the public internet"]}
    assert waited < 4  # a second per query (A, then AAAA), not the system resolver's as long as it likes


@pytest.mark.django_db(transaction=True)
def test_parallel_reads_of_a_slow_provider_take_a_few_sessions_of_the_account_and_the_rest_wait(plans, settings):
    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True
    settings.CONNECTED_MAILBOX_SESSION_SECONDS, settings.CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT = 2, 2
    charlie, dora = UserFactory(account__plan_code="free"), UserFactory(account__plan_code="free")
    with tcp_server(drip) as (port, accepted):
        for owner in (charlie, dora):
            Mailbox.objects.create(account=owner.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                                   address=f"me@{owner.pk}.elsewhere.test", imap_host="127.0.0.1", imap_port=port,
                                   imap_tls=False, imap_username="me", imap_password_encrypted=encrypt("secret"))
        clients = {owner.pk: login_client(owner) for owner in (charlie, dora)}
        answers = []

        def read(owner):
            try:
                answers.append((owner.pk, clients[owner.pk].get("/inbox",
                                                                {"email": f"me@{owner.pk}.elsewhere.test"})))
            finally:
                if threading.current_thread() is not threading.main_thread():
                    db_connection.close()

        readers = [threading.Thread(target=read, args=(charlie,)) for _ in range(5)]
        for reader in readers:
            reader.start()
        time.sleep(0.5)
        read(dora)  # another account's reads are not held by charlie's
        for reader in readers:
            reader.join(10)
    statuses = sorted(response.status_code for pk, response in answers if pk == charlie.pk)
    assert statuses == [429, 429, 429, 502, 502]  # two sessions at the provider, the others told to wait
    busy = next(response for _, response in answers if response.status_code == 429)
    assert busy["Retry-After"] == "2"
    assert busy.json()["detail"] == ("At most 2 reads of connected mailboxes at once per account; the provider is "
                                     "slow to answer. Expected available in 2 seconds.")
    assert [response.status_code for pk, response in answers if pk == dora.pk] == [502]
    assert len(accepted) == 3
    again = clients[charlie.pk].get("/mailboxes")  # the sessions ended, the count with them
    assert again.status_code == 200


def test_a_message_larger_than_the_plan_takes_is_never_read_from_the_provider(provider, charlie, charlie_api):
    Plan.objects.filter(pk=charlie.account.plan_id).update(attachment_max_mb=0)  # 1 MB in all
    imap = imaplib.IMAP4(provider.connect["imap_host"], provider.connect["imap_port"])
    imap.login(provider.connect["username"], provider.connect["password"])
    imap.append("INBOX", "", imaplib.Time2Internaldate(1),
                b"From: x@y.test\r\nSubject: Huge\r\n\r\n" + (b"y" * 998 + b"\r\n") * 1500)
    imap.logout()
    Mailbox.objects.create(account=charlie.account, kind=Mailbox.Kind.CONNECTED, local_part="me",
                           address="me@elsewhere.test", imap_host="127.0.0.1", imap_port=provider.connect["imap_port"],
                           imap_tls=False, imap_username=provider.connect["username"],
                           imap_password_encrypted=encrypt(provider.connect["password"]))
    listing = charlie_api.get("/inbox", {"email": "me@elsewhere.test"}).json()
    by_subject = {m["subject"]: m["uid"] for m in listing["messages"]}
    small = charlie_api.get(f"/inbox/{by_subject['At the other provider']}", {"email": "me@elsewhere.test"})
    assert small.status_code == 200
    huge = charlie_api.get(f"/inbox/{by_subject['Huge']}", {"email": "me@elsewhere.test"})
    assert huge.status_code == 400
    assert huge.json() == {"detail": "a message at 127.0.0.1 is larger than this plan's 1 MB; read it at the provider"}


# connected mailboxes made before ownership had to be proved


@pytest.mark.django_db(transaction=True)
def test_connected_mailboxes_on_addresses_hosted_here_from_before_the_proof_are_forgotten_on_migrating(
        plans, charlie, charlie_api, alice, alice_hosts, settings):
    from django.db import connection as db  # noqa: PLC0415
    from django.db.migrations.executor import MigrationExecutor  # noqa: PLC0415

    executor = MigrationExecutor(db)
    [forget] = [key for key in executor.loader.graph.nodes
                if key[0] == "mailcore" and key[1].endswith("_hardconn_forget_unproven_connected")]
    [before] = executor.loader.graph.node_map[forget].parents
    executor.migrate([before.key])

    def connect(account, address):
        return Mailbox.objects.create(account=account, kind=Mailbox.Kind.CONNECTED, local_part=address.split("@")[0],
                                      address=address, imap_host="imap.far-away.test", imap_port=993,
                                      imap_username="me", imap_password_encrypted=encrypt("secret"))

    doomed = [connect(charlie.account, "ann@example.test"), connect(charlie.account, "info@example.test"),
              connect(charlie.account, "ann+news@example.test"), connect(charlie.account, "nobody@example.test"),
              connect(alice.account, "info@example.test")]
    kept = [connect(charlie.account, "me@elsewhere.test"), connect(alice.account, "other@example.test")]
    forward = MigrationExecutor(db)  # to the newest schema again (later migrations change tables the API reads)
    forward.migrate(forward.loader.graph.leaf_nodes())

    assert set(Mailbox.objects.filter(kind=Mailbox.Kind.CONNECTED).values_list("pk", flat=True)) == {
        mailbox.pk for mailbox in kept}
    assert not Mailbox.objects.filter(pk__in=[mailbox.pk for mailbox in doomed]).exists()
    assert [m["email"] for m in charlie_api.get("/mailboxes").json()] == ["me@elsewhere.test"]
    assert charlie_api.get("/inbox", {"email": "ann@example.test"}).status_code == 404
