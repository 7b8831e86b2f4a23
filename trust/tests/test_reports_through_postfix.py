"""Reports from the internet through Postfix as production runs it (docker/postfix/, its lookup
tables): the report addresses of a verified domain are taken at RCPT and handed over LMTP to the
listener, which keeps the report; the old `dmarc@` suggestion and an unverified domain's report
address are still refused."""
import smtplib

import pytest

from testkit.postfix import postfix
from testkit.smtp_sink import inbound_listener
from testkit.worker_process import wait_until
from trust.models import DmarcReport, TlsReport
from trust.tests.reports_mail import google_dmarc, google_tlsrpt

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix reads the rows the test committed


@pytest.fixture
def mx(acme):
    # The test's clients stand for the internet, so the instance trusts another network.
    with inbound_listener() as listener_port, postfix(lmtp=f"127.0.0.1:{listener_port}",
                                                       mynetworks="203.0.113.0/24") as instance:
        yield instance


def internet(instance) -> smtplib.SMTP:
    client = smtplib.SMTP("127.0.0.1", instance.ports["smtp"], timeout=30)
    client.ehlo("mail-sor-f41.google.com")
    return client


def test_a_dmarc_and_a_tls_report_reach_the_dashboard_through_postfix(mx):
    with internet(mx) as client:
        assert client.sendmail("noreply-dmarc-support@google.com", ["dmarc-reports@acme.test"], google_dmarc()) == {}
        assert client.sendmail("noreply-smtp-tls-reporting@google.com", ["tls-reports@acme.test"],
                               google_tlsrpt()) == {}

    wait_until(lambda: DmarcReport.objects.exists() and TlsReport.objects.exists(), timeout=30,
               what="both reports kept")
    assert DmarcReport.objects.get().org_name == "google.com"
    assert TlsReport.objects.get().successes == 150


@pytest.mark.parametrize("address", ["dmarc@acme.test", "dmarc-reports@pending.test"])
def test_other_addresses_are_refused_at_rcpt(mx, address):
    with internet(mx) as client:
        client.mail("noreply-dmarc-support@google.com")
        code, _ = client.rcpt(address)

    assert code in (550, 554)
