"""The corpus delivered over LMTP becomes the figures partners read: the same numbers in
/v1/hosting/domains/{id}/dmarc and on the portal's dashboard; another partner gets 404; bad
queries get 422 and change nothing."""
import re

import pytest

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import key_client, login_client
from trust.models import MonthlyReportSetting

pytestmark = pytest.mark.django_db(transaction=True)

SOURCES = [
    {"source_ip": "192.0.2.10", "reverse_name": "relay.mailwell.test", "ours": True, "messages": 190,
     "aligned": 190, "failed": 0, "spf_aligned": 190, "dkim_aligned": 190, "spf_pass": 190, "dkim_pass": 190,
     "dispositions": {"none": 190}},
    {"source_ip": "192.0.2.11", "reverse_name": "relay2.mailwell.test", "ours": True, "messages": 10, "aligned": 0,
     "failed": 10, "spf_aligned": 0, "dkim_aligned": 0, "spf_pass": 0, "dkim_pass": 0, "dispositions": {"none": 10}},
    {"source_ip": "198.51.100.7", "reverse_name": "", "ours": False, "messages": 7, "aligned": 0, "failed": 7,
     "spf_aligned": 0, "dkim_aligned": 0, "spf_pass": 0, "dkim_pass": 0, "dispositions": {"none": 7}},
    {"source_ip": "209.85.220.41", "reverse_name": "mail-sor-f41.google.com", "ours": False, "messages": 3,
     "aligned": 3, "failed": 0, "spf_aligned": 0, "dkim_aligned": 3, "spf_pass": 3, "dkim_pass": 3,
     "dispositions": {"none": 3}},
]


@pytest.fixture
def stranger_partner(charlie_factory):
    charlie = charlie_factory()
    partner = hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    domain_add_for_partner(partner=partner, name="globex.test", client=None)
    return key_client(charlie, list(PARTNER_SCOPES))


def test_the_api_shows_the_corpus_figures(hosting, corpus_delivered, clock):
    response = hosting.get(f"/v1/hosting/domains/{corpus_delivered.pk}/dmarc")

    assert response.status_code == 200, response.content
    body = response.json()
    assert {key: body[key] for key in ("domain", "reports", "messages", "aligned", "failed", "aligned_percent",
                                       "spf_aligned", "dkim_aligned", "spf_pass", "dkim_pass", "published_policy",
                                       "days_reported")} == {
        "domain": "acme.test", "reports": 4, "messages": 210, "aligned": 193, "failed": 17, "aligned_percent": 91.9,
        "spf_aligned": 190, "dkim_aligned": 193, "spf_pass": 193, "dkim_pass": 193, "published_policy": "none",
        "days_reported": 2}
    assert body["sources"] == SOURCES
    reported_days = [day for day in body["days"] if day["messages"]]
    assert reported_days == [{"day": "2026-11-03", "messages": 168, "aligned": 163, "failed": 5},
                             {"day": "2026-11-04", "messages": 42, "aligned": 30, "failed": 12}]
    assert (body["days"][0]["day"], body["days"][-1]["day"], len(body["days"])) == ("2026-10-11", "2026-11-10", 31)
    assert body["tls"] == {"reports": 2, "successes": 210, "failures": 2, "failure_types": {"certificate-expired": 2}}
    assert (body["advice"]["stage"], body["advice"]["policy"]) == ("collecting", "none")
    assert body["advice"]["text"] == ("Keep p=none: reports arrived on 2 of the 14 days needed before a stricter "
                                      "policy can be judged.")


def test_the_reports_list_has_each_report_once_with_its_sources(hosting, corpus_delivered, clock):
    response = hosting.get(f"/v1/hosting/domains/{corpus_delivered.pk}/dmarc/reports", {"per_page": 2})

    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["page"], body["per_page"]) == (4, 1, 2)
    assert [report["org_name"] for report in body["reports"]] == ["Fastmail Pty Ltd", "Yahoo"]
    assert body["reports"][1]["sources"][1] == {
        "source_ip": "198.51.100.7", "reverse_name": "", "ours": False, "count": 2, "disposition": "none",
        "spf_aligned": False, "dkim_aligned": False, "spf_result": "fail", "dkim_result": "fail",
        "header_from": "acme.test"}


def test_the_dashboard_shows_the_same_figures(alice, corpus_delivered, clock):
    page = login_client(alice).get(f"/portal/domains/{corpus_delivered.pk}/reports/")

    assert page.status_code == 200
    html = page.content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "Messages reported 210 2 days with reports" in text
    assert "Passed DMARC 91.9% 193 aligned, 17 failed" in text
    assert "SPF aligned 190 193 passed SPF, aligned or not" in text
    assert "DKIM aligned 193 193 passed DKIM, aligned or not" in text
    assert "192.0.2.10 relay.mailwell.test Our server 190 190 (100.0%) 190 190" in text
    assert "192.0.2.11 relay2.mailwell.test Our server 10 0 (0.0%) 0 0" in text
    assert "198.51.100.7 Outside sender 7 0 (0.0%) 0 0" in text
    assert "209.85.220.41 mail-sor-f41.google.com Outside sender 3 3 (100.0%) 0 3" in text
    assert "210 successful and 2 failed TLS sessions in 2 reports." in text
    assert "certificate-expired: 2" in text
    assert "Keep p=none: reports arrived on 2 of the 14 days needed" in text
    assert "An outside source sends as the domain and fails DMARC ( 198.51.100.7 )" in text
    assert "One of our servers fails DMARC for the domain ( 192.0.2.11 )" in text
    chart = html[html.index('<svg class="chart"'):]
    assert chart[:chart.index("</svg>")].count("<rect ") == 62  # 31 days, two bars each
    assert 'title>03 Nov: 168 messages, 163 aligned, 5 failing</title>' in html
    assert re.search(r"\d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d, one column a day: passed DMARC, failed\.", text)


def test_the_domain_page_links_to_the_dashboard(alice, acme):
    page = login_client(alice).get(f"/portal/domains/{acme.pk}/")

    assert f'href="/portal/domains/{acme.pk}/reports/"' in page.content.decode()


def test_another_partner_s_domain_is_404(stranger_partner, corpus_delivered):
    for path in ("dmarc", "dmarc/reports", "monthly-report"):
        assert stranger_partner.get(f"/v1/hosting/domains/{corpus_delivered.pk}/{path}").status_code == 404
    response = stranger_partner.patch(f"/v1/hosting/domains/{corpus_delivered.pk}/monthly-report",
                                      {"enabled": True, "send_to": "x@globex.test"}, format="json")
    assert response.status_code == 404
    assert MonthlyReportSetting.objects.count() == 0


def test_a_window_out_of_range_is_422(hosting, acme):
    response = hosting.get(f"/v1/hosting/domains/{acme.pk}/dmarc", {"days": 0})

    assert response.status_code == 422
    assert "days" in response.json()["errors"]


def test_the_monthly_report_switch(hosting, acme):
    url = f"/v1/hosting/domains/{acme.pk}/monthly-report"
    assert hosting.get(url).json() == {"enabled": False, "send_to": ""}

    refused = hosting.patch(url, {"enabled": True}, format="json")
    assert refused.status_code == 422
    assert refused.json()["errors"] == {"send_to": ["the client's contact address is needed to send the monthly "
                                                    "report"]}
    assert MonthlyReportSetting.objects.count() == 0
    assert hosting.patch(url, {"enabled": "yes"}, format="json").status_code == 422

    response = hosting.patch(url, {"enabled": True, "send_to": "Boss@Acme-Corp.test"}, format="json")
    assert response.status_code == 200
    assert hosting.get(url).json() == {"enabled": True, "send_to": "boss@acme-corp.test"}


def test_the_portal_switches_the_monthly_report(alice, acme):
    client = login_client(alice)

    refused = client.post(f"/portal/domains/{acme.pk}/reports/monthly/", {"enabled": "on"})
    assert refused.status_code == 400
    assert "contact address is needed to send the monthly report" in refused.content.decode()

    saved = client.post(f"/portal/domains/{acme.pk}/reports/monthly/", {"enabled": "on", "send_to": "boss@acme.test"})
    assert saved.status_code == 302
    setting = MonthlyReportSetting.objects.get()
    assert (setting.enabled, setting.send_to) == (True, "boss@acme.test")


def test_the_schema_states_the_endpoints(api):
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    assert set(paths["/v1/hosting/domains/{domain_id}/dmarc"]) == {"get"}
    assert set(paths["/v1/hosting/domains/{domain_id}/monthly-report"]) == {"get", "patch"}
    days = next(p for p in paths["/v1/hosting/domains/{domain_id}/dmarc"]["get"]["parameters"] if p["name"] == "days")
    assert (days["schema"]["minimum"], days["schema"]["maximum"]) == (1, 366)
    assert "422" in paths["/v1/hosting/domains/{domain_id}/monthly-report"]["patch"]["responses"]
