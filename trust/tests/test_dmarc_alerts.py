"""domain.dmarc_alert: an outside source failing DMARC as the domain, or one of our servers failing,
raises one event per source and kind in each 7-day period, however many reports show it."""
import pytest

from testkit.mail import events
from trust.models import DmarcAlert
from trust.tests.conftest import deliver
from trust.tests.reports_mail import corpus, gzipped, report_mail

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_failing_source_raises_one_alert_though_two_reports_show_it(corpus_delivered):
    # Outlook's (3 November) and Yahoo's (4 November) reports both show 198.51.100.7 failing.
    assert events("domain.dmarc_alert") == [
        {"domain_id": corpus_delivered.pk, "domain": "acme.test", "kind": "unknown_source",
         "source_ip": "198.51.100.7", "reverse_name": None, "messages": 5, "failed": 5,
         "reporter": "Enterprise Outlook", "report_id": "7d1c2b0ba6e84a33b1e4f2d2a5c9e6f1",
         "period_start": "2026-11-02"},
        {"domain_id": corpus_delivered.pk, "domain": "acme.test", "kind": "our_server_failing",
         "source_ip": "192.0.2.11", "reverse_name": "relay2.mailwell.test", "messages": 10, "failed": 10,
         "reporter": "Fastmail Pty Ltd", "report_id": "acme.test-1793750400-7f3a", "period_start": "2026-11-02"},
    ]


def test_the_same_source_in_the_next_period_alerts_again(corpus_delivered, listener):
    # Yahoo's report a week later (10 November), the spoofer still at it.
    later = (corpus("yahoo.xml").replace(b"1793750400", b"1794268800").replace(b"1793836799", b"1794355199"))
    raw = report_mail(to="dmarc-reports@acme.test", sender="dmarchelp@yahooinc.com", subject="Report",
                      filename="yahoo.com!acme.test!1794268800!1794355199.xml.gz", content_type="application/gzip",
                      payload=gzipped(later))

    assert deliver(listener, raw, "dmarc-reports@acme.test") == {}

    alerts = [(event["kind"], event["source_ip"], event["period_start"]) for event in events("domain.dmarc_alert")]
    assert alerts == [("unknown_source", "198.51.100.7", "2026-11-02"), ("our_server_failing", "192.0.2.11", "2026-11-02"),
                      ("unknown_source", "198.51.100.7", "2026-11-09")]
    assert DmarcAlert.objects.count() == 3


def test_aligned_sources_raise_no_alert(acme, listener):
    raw = report_mail(to="dmarc-reports@acme.test", sender="noreply-dmarc-support@google.com", subject="Report",
                      filename="google.xml", content_type="text/xml", payload=corpus("google.xml"))

    assert deliver(listener, raw, "dmarc-reports@acme.test") == {}

    assert events("domain.dmarc_alert") == []
