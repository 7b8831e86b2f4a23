"""Outbound Postfix honours receiving domains' MTA-STS policies, as production runs it: docker/postfix's
main.cf (dnssec look-ups, `dane` level, the socketmap policy table) with the real postfix-mta-sts-resolver
fetching each receiver's policy over HTTPS (testkit/mta_sts.py: a loopback nameserver, policy server and
the resolver; Postfix started in a mount namespace whose resolv.conf names that nameserver).

The receivers' policies are the text our own policy view serves (mailcore.domains.mta_sts), so the test
also shows a real MTA-STS client accepts what we publish. One TLS sink stands for every receiver's MX; its
certificate names mx.good.test only: good.test (enforce) gets its mail, bad.test (enforce, MX mx.bad.test)
does not (deferred: the certificate does not match its policy), lax.test (testing) gets it anyway."""
import smtplib
import socket
import ssl
import subprocess

import pytest
import trustme
from aiosmtpd.controller import Controller

from mailcore.domains.models import Domain
from mailcore.domains.mta_sts import mta_sts_policy, mta_sts_record_value
from testkit.factories import make_message
from testkit.mta_sts import loopback_address, mta_sts_resolver, nameserver, policy_server
from testkit.postfix import postfix
from testkit.smtp_sink import SinkHandler
from testkit.worker_process import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix's lookup tables read the test database

RECEIVERS = {"good.test": "enforce", "bad.test": "enforce", "lax.test": "testing"}


def published_policy(name: str, mode: str, settings) -> tuple[str, str]:
    """(policy text, _mta-sts value) our code serves for a domain in `mode` whose MX is mx.<name>."""
    settings.MAIL_HOST = f"mx.{name}"
    domain = Domain(name=name, mta_sts_mode=mode)
    return mta_sts_policy(domain), mta_sts_record_value(domain)


@pytest.fixture
def receivers(dns_zone, settings, tmp_path):
    """The three receiving domains in the loopback DNS, their policies over HTTPS, their MX (one TLS sink),
    and the resolver; yields (sink handler, resolver port, resolv.conf, CA file, resolver log)."""
    authority = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    policies, records = {}, {}
    for name, mode in RECEIVERS.items():
        policies[name], records[name] = published_policy(name, mode, settings)
    sink_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("mx.good.test").configure_cert(sink_context)
    handler, mx_address = SinkHandler(), loopback_address()
    sink = Controller(handler, hostname=mx_address, port=25, tls_context=sink_context, server_hostname="mx.good.test")
    sink.start()
    try:
        with policy_server(authority, policies) as web_address, nameserver(dns_zone, tmp_path) as resolv_conf:
            for name in RECEIVERS:
                dns_zone.set(name, "MX", f"10 mx.{name}")
                dns_zone.set(f"mx.{name}", "A", mx_address)
                dns_zone.set(f"_mta-sts.{name}", "TXT", records[name])
                dns_zone.set(f"mta-sts.{name}", "A", web_address)
            with mta_sts_resolver(resolv_conf=resolv_conf, ca_file=ca_file, directory=tmp_path) as (port, log):
                yield handler, port, resolv_conf, ca_file, log
    finally:
        sink.stop()


@pytest.fixture
def mta(receivers):
    """Postfix with production's outbound TLS settings, the resolver as its policy table, the test CA."""
    _handler, port, resolv_conf, ca_file, _log = receivers
    with postfix(lmtp="127.0.0.1:1", resolv_conf=resolv_conf, smtp_dns_support_level="dnssec",
                 smtp_host_lookup="dns", smtp_tls_CAfile=str(ca_file),
                 smtp_tls_policy_maps=f"socketmap:inet:127.0.0.1:{port}:postfix") as instance:
        main_cf = (instance.config / "main.cf").read_text()
        assert "smtp_tls_security_level = dane" in main_cf  # production's level, from docker/postfix/main.cf
        yield instance


def relay(instance, recipient: str, subject: str) -> None:
    try:
        with smtplib.SMTP("127.0.0.1", instance.ports["10025"], timeout=30) as client:
            assert client.sendmail("ann@example.test", [recipient], make_message(subject, to=recipient)) == {}
    except smtplib.SMTPException as error:
        raise AssertionError(f"{error}\n{instance.log()[-3000:]}") from error


def queued(instance) -> str:
    return subprocess.run(["/usr/sbin/postqueue", "-c", str(instance.config), "-p"], capture_output=True,
                          text=True).stdout


def delivered(handler, subject: str) -> bool:
    return any(f"Subject: {subject}".encode() in message.content for message in handler.messages)


def test_the_resolver_answers_postfix_with_each_receivers_policy(receivers):
    _handler, port, *_ = receivers

    def netstring(text: str) -> bytes:
        return b"%d:%s," % (len(text), text.encode())

    def ask(domain: str) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
            connection.sendall(netstring(f"postfix {domain}"))
            return connection.recv(1024)

    assert ask("good.test") == netstring("OK secure match=mx.good.test servername=hostname")
    assert ask("bad.test") == netstring("OK secure match=mx.bad.test servername=hostname")
    assert ask("lax.test") == netstring("NOTFOUND ")  # testing: Postfix keeps its own level
    assert ask("nowhere.test") == netstring("NOTFOUND ")


def test_a_receiver_whose_certificate_does_not_match_its_enforced_policy_gets_nothing(mta, receivers):
    handler, *_ = receivers
    relay(mta, "bob@bad.test", "For bad")
    wait_until(lambda: "to=<bob@bad.test>" in mta.log() and "status=deferred" in mta.log(), timeout=60,
               what="the delivery to bad.test deferred")
    line = next(line for line in mta.log().splitlines() if "to=<bob@bad.test>" in line)
    assert "status=deferred (Server certificate not verified)" in line, mta.log()[-3000:]
    assert "bob@bad.test" in queued(mta)
    assert not delivered(handler, "For bad")


def test_a_receiver_whose_certificate_matches_gets_its_mail_over_verified_tls(mta, receivers):
    handler, *_ = receivers
    relay(mta, "bob@good.test", "For good")
    wait_until(lambda: delivered(handler, "For good"), timeout=60, what="the message at good.test's MX")
    assert "Verified TLS connection established to mx.good.test" in mta.log()
    assert "bob@good.test" not in queued(mta)


def test_a_policy_in_testing_mode_does_not_stop_delivery(mta, receivers):
    handler, *_ = receivers
    relay(mta, "bob@lax.test", "For lax")
    wait_until(lambda: delivered(handler, "For lax"), timeout=60, what="the message at lax.test's MX")
    line = next(line for line in mta.log().splitlines() if "to=<bob@lax.test>" in line)
    assert "status=sent" in line
