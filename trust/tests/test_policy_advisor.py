"""The policy advisor's rule, read from stored reports: 14 days of reports in the last 30, >= 98 %
of messages DMARC-aligned and none of our servers failing make p=quarantine safe; 14 days of reports
under p=quarantine then make p=reject safe."""
from datetime import UTC, datetime, timedelta

import pytest

from testkit.clients import login_client
from trust.dmarc_xml import dmarc_report_parse
from trust.services import dmarc_report_store

pytestmark = pytest.mark.django_db

FIRST_DAY = datetime(2026, 10, 20, tzinfo=UTC)  # 14 days to 2 November; the clock stands on 10 November


def daily_report(day: int, *, policy: str = "none", aligned: int = 100, failing: int = 0,
                 failing_ip: str = "198.51.100.7") -> bytes:
    begin = int((FIRST_DAY + timedelta(days=day)).timestamp())
    rows = [("192.0.2.10", aligned, "pass")] + ([(failing_ip, failing, "fail")] if failing else [])
    records = "".join(
        f"<record><row><source_ip>{ip}</source_ip><count>{count}</count><policy_evaluated>"
        f"<disposition>none</disposition><dkim>{result}</dkim><spf>{result}</spf></policy_evaluated></row>"
        f"<identifiers><header_from>acme.test</header_from></identifiers><auth_results><dkim><domain>acme.test"
        f"</domain><result>{result}</result></dkim><spf><domain>acme.test</domain><result>{result}</result></spf>"
        f"</auth_results></record>" for ip, count, result in rows)
    return (f"<feedback><report_metadata><org_name>google.com</org_name><report_id>r{day}-{policy}</report_id>"
            f"<date_range><begin>{begin}</begin><end>{begin + 86399}</end></date_range></report_metadata>"
            f"<policy_published><domain>acme.test</domain><p>{policy}</p></policy_published>{records}</feedback>"
            ).encode()


def keep(domain, days: range, **options) -> None:
    for day in days:
        dmarc_report_store(domain=domain, report=dmarc_report_parse(daily_report(day, **options)))


def advice(hosting, domain) -> dict:
    response = hosting.get(f"/v1/hosting/domains/{domain.pk}/dmarc")
    assert response.status_code == 200
    return response.json()["advice"]


def test_thirteen_days_are_not_enough(hosting, acme, clock):
    keep(acme, range(13))

    assert (advice(hosting, acme)["stage"], advice(hosting, acme)["policy"]) == ("collecting", "none")


def test_fourteen_clean_days_make_quarantine_safe(hosting, acme, clock, alice):
    keep(acme, range(14), aligned=99, failing=1)  # 99 % aligned, the failing one an outside sender

    said = advice(hosting, acme)
    assert (said["stage"], said["policy"]) == ("quarantine", "quarantine")
    assert said["text"] == "Safe to publish p=quarantine: failing mail goes to spam folders instead of inboxes."
    page = login_client(alice).get(f"/portal/domains/{acme.pk}/reports/").content.decode()
    assert "Safe to publish p=quarantine" in page
    assert "v=DMARC1; p=quarantine; rua=mailto:dmarc-reports@acme.test" in page


def test_below_98_percent_the_failing_sources_come_first(hosting, acme, clock):
    keep(acme, range(14), aligned=97, failing=3)

    said = advice(hosting, acme)
    assert (said["stage"], said["policy"]) == ("fix_sources", "none")
    assert said["text"].startswith("Keep p=none: only 97% of messages pass DMARC (at least 98% needed).")


def test_one_of_our_servers_failing_holds_the_policy_back(hosting, acme, clock):
    keep(acme, range(14), aligned=999, failing=1, failing_ip="192.0.2.11")  # 99.9 % aligned

    said = advice(hosting, acme)
    assert said["stage"] == "fix_sources"
    assert said["text"].startswith("Keep p=none: 1 of our servers fail DMARC. Check the failing sources below")


def test_fourteen_days_under_quarantine_make_reject_safe(hosting, acme, clock):
    keep(acme, range(14), policy="quarantine")

    assert (advice(hosting, acme)["stage"], advice(hosting, acme)["policy"]) == ("reject", "reject")


def test_under_quarantine_for_fewer_days_it_waits(hosting, acme, clock):
    keep(acme, range(7))
    keep(acme, range(7, 14), policy="quarantine")

    said = advice(hosting, acme)
    assert (said["stage"], said["policy"]) == ("wait_quarantine", "quarantine")
    assert said["text"] == "Keep p=quarantine: reports have shown it on 7 of the 14 days needed before p=reject."
