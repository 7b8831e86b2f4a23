"""The monthly report: switched on for a client domain, last month's figures go once to the client's
contact address under the partner's brand, through Django's mail API; a run killed mid-way leaves
the domains it finished sent and the next runs send each of the others exactly once."""
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
import pytest
import time_machine

from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.sweep import job_named, job_run
from trust.models import MonthlyReportRun
from trust.monthly import monthly_reports_send
from trust.services import monthly_report_set
from webmail.models import WebmailBrand

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_OF_DECEMBER = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
NOVEMBER = date(2026, 11, 1)


@pytest.fixture
def branded(partner):
    return WebmailBrand.objects.create(partner=partner, brand_name="Northwind Hosting", primary_color="#0055aa")


def test_last_month_s_report_goes_once_with_the_partner_s_brand(corpus_delivered, branded, mailoutbox):
    monthly_report_set(domain=corpus_delivered, enabled=True, send_to="boss@acme-corp.test")

    with time_machine.travel(FIRST_OF_DECEMBER, tick=False):
        assert monthly_reports_send() == {"sent": 1, "failed": 0}
        assert monthly_reports_send() == {"sent": 0, "failed": 0}
    with time_machine.travel(FIRST_OF_DECEMBER + timedelta(days=3), tick=False):
        assert monthly_reports_send() == {"sent": 0, "failed": 0}

    [message] = mailoutbox
    assert message.to == ["boss@acme-corp.test"]
    assert message.from_email == f"Northwind Hosting <no-reply@{settings.SYSTEM_MAIL_DOMAIN}>"
    assert message.subject == "acme.test: mail authentication in November 2026"
    assert message.extra_headers["Message-ID"] == f"<dmarc-monthly.{corpus_delivered.pk}.202611@mail.mailwell.test>"
    assert "Messages reported: 210\n" in message.body
    assert "Passed DMARC (SPF or DKIM aligned): 193 (91.9%)\n" in message.body
    assert "Sent by our servers: 2 sources; by outside senders: 2\n" in message.body
    assert "Encrypted delivery (TLS reports): 210 successful, 2 failed connections\n" in message.body
    assert message.body.rstrip().endswith("Northwind Hosting")
    html = message.alternatives[0][0]
    assert 'background: #0055aa' in html and "Northwind Hosting</div>" in html
    assert "<td>193 (91.9%)</td>" in html


def test_the_sweep_runs_it_as_a_job_of_trust(acme, mailoutbox):
    monthly_report_set(domain=acme, enabled=True, send_to="boss@acme-corp.test")

    with time_machine.travel(FIRST_OF_DECEMBER, tick=False):
        assert job_run(job_named("dmarc-monthly-reports")) == {"sent": 1, "failed": 0}

    [message] = mailoutbox
    assert "Messages reported: 0\n" in message.body


def test_nothing_goes_while_the_switch_is_off(corpus_delivered, mailoutbox):
    monthly_report_set(domain=corpus_delivered, enabled=False, send_to="boss@acme-corp.test")

    with time_machine.travel(FIRST_OF_DECEMBER, tick=False):
        assert monthly_reports_send() == {"sent": 0, "failed": 0}

    assert mailoutbox == [] and MonthlyReportRun.objects.count() == 0


def test_a_run_killed_mid_way_is_finished_by_the_next_runs_each_domain_once(partner, acme, mailoutbox):
    partner.extra_domain_slots = 1
    partner.save()
    domains = [acme] + [domain_mark_verified(domain=domain_add_for_partner(partner=partner, name=name, client=None))
                        for name in ("beta.test", "gamma.test")]
    for domain in domains:
        monthly_report_set(domain=domain, enabled=True, send_to=f"owner@{domain.name}")
    # What a worker killed while sending beta.test's report leaves: acme.test's marked sent,
    # beta.test's claimed and not marked, gamma.test's not begun.
    MonthlyReportRun.objects.create(domain=acme, month=NOVEMBER, claimed_at=FIRST_OF_DECEMBER,
                                    sent_at=FIRST_OF_DECEMBER, sent_to="owner@acme.test")
    MonthlyReportRun.objects.create(domain=domains[1], month=NOVEMBER, claimed_at=FIRST_OF_DECEMBER)

    with time_machine.travel(FIRST_OF_DECEMBER + timedelta(minutes=5), tick=False):
        assert monthly_reports_send() == {"sent": 1, "failed": 0}  # gamma; beta's claim is still young
    with time_machine.travel(FIRST_OF_DECEMBER + timedelta(hours=2), tick=False):
        assert monthly_reports_send() == {"sent": 1, "failed": 0}  # beta's claim outlived its lease
        assert monthly_reports_send() == {"sent": 0, "failed": 0}

    assert [message.to for message in mailoutbox] == [["owner@gamma.test"], ["owner@beta.test"]]
    assert set(MonthlyReportRun.objects.values_list("sent_to", flat=True)) == {
        "owner@acme.test", "owner@beta.test", "owner@gamma.test"}
