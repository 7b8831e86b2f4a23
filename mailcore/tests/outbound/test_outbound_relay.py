"""relay(): to the SMTP relay when SMTP_URL is set, else local delivery plus the local outbox."""
import pytest
from aiosmtpd.smtp import AuthResult

from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.inbound.delivery import deliver_if_hosted
from mailcore.mailboxes.services import mailbox_create
from mailcore.outbound.relay import Outcome, relay
from mailcore.store.factory import store_for
from testkit.smtp_sink import free_port, smtp_sink

RAW = b"From: ann@example.test\r\nSubject: Hi\r\nMessage-ID: <r1@example.test>\r\n\r\nHello\r\n"


@pytest.fixture(autouse=True)
def embedded(settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path


# AUTH without TLS is fine on loopback; aiosmtpd warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


def check_login(server, session, envelope, mechanism, auth_data):
    # handled=False: aiosmtpd then answers the refusal itself (535).
    return AuthResult(success=(auth_data.login, auth_data.password) == (b"relay-user", b"p@ss word"), handled=False)


def test_it_logs_in_to_the_relay_and_hands_over_the_message_unchanged(settings):
    options = {"auth_required": True, "auth_require_tls": False, "authenticator": check_login}
    with smtp_sink(server_options=options) as (port, sink):
        settings.SMTP_URL = f"smtp://relay-user:p%40ss%20word@127.0.0.1:{port}"
        outcomes = relay("ann@example.test", ["x@elsewhere.test", "y@elsewhere.test"], RAW)
    assert outcomes == [Outcome("x@elsewhere.test", "relayed", "250 2.0.0 Relayed"),
                        Outcome("y@elsewhere.test", "relayed", "250 2.0.0 Relayed")]
    assert [(m.mail_from, m.rcpt_tos, m.content) for m in sink.messages] == [
        ("ann@example.test", ["x@elsewhere.test", "y@elsewhere.test"], RAW)]


def test_a_wrong_relay_password_defers_the_mail_instead_of_bouncing_it(settings):
    options = {"auth_required": True, "auth_require_tls": False, "authenticator": check_login}
    with smtp_sink(server_options=options) as (port, sink):
        settings.SMTP_URL = f"smtp://relay-user:wrong@127.0.0.1:{port}"
        [outcome] = relay("ann@example.test", ["x@elsewhere.test"], RAW)
    assert (outcome.status, outcome.reply) == (
        "deferred", f"451 4.7.0 Relay 127.0.0.1:{port} refused our login or TLS (SMTPAuthenticationError)")
    assert sink.messages == []


def test_each_recipient_gets_the_relays_own_answer(settings):
    refuse = {"gone@elsewhere.test": "550 5.1.1 No such user", "busy@elsewhere.test": "451 4.3.2 Try later"}
    with smtp_sink(refuse=refuse) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        outcomes = relay("ann@example.test", ["gone@elsewhere.test", "ok@elsewhere.test", "busy@elsewhere.test"], RAW)
    assert outcomes == [
        Outcome("gone@elsewhere.test", "refused", "550 5.1.1 No such user"),
        Outcome("ok@elsewhere.test", "relayed", "250 2.0.0 Relayed"),
        Outcome("busy@elsewhere.test", "deferred", "451 4.3.2 Try later"),
    ]
    assert [m.rcpt_tos for m in sink.messages] == [["ok@elsewhere.test"]]


def test_an_unreachable_relay_defers_every_recipient(settings):
    port = free_port()
    settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
    assert relay("", ["x@elsewhere.test"], RAW) == [
        Outcome("x@elsewhere.test", "deferred",
                f"451 4.4.1 Relay 127.0.0.1:{port} unavailable (ConnectionRefusedError)")]


@pytest.mark.django_db
def test_without_a_relay_hosted_recipients_are_delivered_and_the_rest_kept_in_the_outbox(alice, tmp_path):
    domain = domain_mark_verified(domain=domain_create(account=alice.account, name="example.test"))
    bob = mailbox_create(domain=domain, local_part="bob", password="mailbox-pass-1")
    outcomes = relay("ann@example.test", ["far@elsewhere.test", "bob@example.test", "nobody@example.test"], RAW,
                     local=deliver_if_hosted)
    [path] = (tmp_path / "outbox").iterdir()
    assert outcomes == [
        Outcome("far@elsewhere.test", "outbox", f"250 2.0.0 Kept in the local outbox as {path.name}"),
        Outcome("bob@example.test", "delivered", "250 2.0.0 Delivered"),
        Outcome("nobody@example.test", "refused", "550 5.1.1 No such user here"),
    ]
    assert path.read_bytes() == (
        b"X-Outbox-Envelope-From: <ann@example.test>\r\nX-Outbox-Envelope-To: <far@elsewhere.test>\r\n" + RAW)
    store = store_for(bob)
    assert store.fetch("INBOX", store.list("INBOX").messages[0].uid).raw == (
        b"Return-Path: <ann@example.test>\r\nDelivered-To: bob@example.test\r\n" + RAW)


@pytest.mark.parametrize("address", ["x@y.test\r\nBcc: z@y.test", "<x@y.test>", "x y@y.test"])
def test_an_envelope_address_that_could_inject_headers_is_refused(address, tmp_path):
    with pytest.raises(ValueError, match="invalid envelope address"):
        relay("ann@example.test", [address], RAW)
    assert not (tmp_path / "outbox").exists()


def test_it_upgrades_to_tls_with_starttls_and_verifies_the_relays_certificate(settings, tmp_path):
    import ssl

    import trustme

    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    options = {"tls_context": server_context, "require_starttls": True, "auth_required": True,
               "authenticator": check_login}
    with smtp_sink(server_options=options) as (port, sink):
        settings.SMTP_URL = f"smtp://relay-user:p%40ss%20word@127.0.0.1:{port}?starttls=true"
        settings.SMTP_CA_BUNDLE = ""
        [untrusted] = relay("ann@example.test", ["x@elsewhere.test"], RAW)
        settings.SMTP_CA_BUNDLE = str(bundle)
        [trusted] = relay("ann@example.test", ["x@elsewhere.test"], RAW)
    assert untrusted.status == "deferred"  # an unknown certificate is never trusted
    assert trusted == Outcome("x@elsewhere.test", "relayed", "250 2.0.0 Relayed")
    assert [m.content for m in sink.messages] == [RAW]
