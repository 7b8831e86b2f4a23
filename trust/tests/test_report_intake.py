"""Reports arrive as mail at a domain's report addresses, through the real listener over LMTP:
each receiver's format is read and kept once; unreadable, hostile or misaddressed reports are
refused with 550 5.6.0 and nothing is kept; the report addresses belong to no mailbox."""
import io
import smtplib
import zipfile

import pytest

from mailcore.errors import InvalidFields
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.mailboxes import partner_mailbox_create, slot_funding
from mailcore.partners.services import slots_grant
from testkit.mail import inbox
from trust.models import DmarcReport, DmarcSource, TlsReport
from trust.tests.conftest import deliver
from trust.tests.reports_mail import corpus, google_dmarc, gzipped, microsoft_dmarc, report_mail, zipped

pytestmark = pytest.mark.django_db(transaction=True)


def refusal(port: int, raw: bytes, to: str) -> tuple[int, bytes]:
    """The reply to the message (LMTP answers each recipient after DATA)."""
    with pytest.raises(smtplib.SMTPDataError) as refused:
        deliver(port, raw, to, "reporter@receiver.test")
    return refused.value.smtp_code, refused.value.smtp_error


def test_every_receiver_s_report_is_kept_with_its_sources(corpus_delivered):
    reports = {report.org_name: report for report in DmarcReport.objects.all()}

    assert sorted(reports) == ["Enterprise Outlook", "Fastmail Pty Ltd", "Yahoo", "google.com"]
    google = reports["google.com"]
    assert (google.report_id, google.policy_domain, google.policy, google.policy_pct) == (
        "13906523588412877419", "acme.test", "none", 100)
    assert [(s.source_ip, s.reverse_name, s.ours, s.count, s.disposition, s.spf_aligned, s.dkim_aligned,
             s.spf_result, s.dkim_result, s.header_from) for s in google.sources.all()] == [
        ("192.0.2.10", "relay.mailwell.test", True, 120, "none", True, True, "pass", "pass", "acme.test"),
        ("209.85.220.41", "mail-sor-f41.google.com", False, 3, "none", False, True, "pass", "pass", "acme.test"),
    ]
    [spoofer] = reports["Enterprise Outlook"].sources.filter(source_ip="198.51.100.7")
    assert (spoofer.reverse_name, spoofer.ours, spoofer.spf_result, spoofer.dkim_result, spoofer.aligned) == (
        "", False, "softfail", "none", False)
    [ours_failing] = reports["Fastmail Pty Ltd"].sources.all()  # the dmarc-2.0 namespace
    assert (ours_failing.source_ip, ours_failing.ours, ours_failing.count, ours_failing.aligned) == (
        "192.0.2.11", True, 10, False)
    assert sorted(TlsReport.objects.values_list("org_name", "successes", "failures")) == [
        ("Google Inc.", 150, 2), ("Microsoft Corporation", 60, 0)]


def test_the_same_report_delivered_twice_is_kept_once(acme, listener):
    assert deliver(listener, google_dmarc(), "dmarc-reports@acme.test") == {}
    assert deliver(listener, google_dmarc(), "dmarc-reports@acme.test") == {}

    assert DmarcReport.objects.count() == 1
    assert DmarcSource.objects.count() == 2


def test_a_tagged_report_address_reaches_the_reports_too(acme, listener):
    assert deliver(listener, microsoft_dmarc(), "dmarc-reports+outlook@acme.test") == {}

    assert DmarcReport.objects.get().org_name == "Enterprise Outlook"


def test_a_zip_bomb_is_refused_and_nothing_is_kept(acme, listener, settings):
    settings.DMARC_REPORT_MAX_BYTES = 1024 * 1024
    bomb = zipped("google.com!acme.test!1!2.xml", b"<feedback>" + b" " * (64 * 1024 * 1024))
    assert len(bomb) < 100 * 1024  # 64 MiB inside, well under 100 KiB on the wire
    raw = report_mail(to="dmarc-reports@acme.test", sender="noreply-dmarc-support@google.com", subject="Report",
                      filename="bomb.zip", content_type="application/zip", payload=bomb)

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert (code, reply) == (550, b"5.6.0 Report not accepted: a report unpacks to more than 1048576 bytes; refused")
    assert DmarcReport.objects.count() == 0


def test_a_gzip_bomb_is_refused(acme, listener, settings):
    settings.DMARC_REPORT_MAX_BYTES = 1024 * 1024
    raw = report_mail(to="tls-reports@acme.test", sender="noreply-smtp-tls-reporting@google.com", subject="Report",
                      filename="bomb.json.gz", content_type="application/tlsrpt+gzip",
                      payload=gzipped(b"{" + b" " * (32 * 1024 * 1024)))

    code, reply = refusal(listener, raw, "tls-reports@acme.test")

    assert code == 550 and b"unpacks to more than 1048576 bytes" in reply
    assert TlsReport.objects.count() == 0


def test_a_zip_claiming_a_small_size_but_holding_more_is_stopped_while_reading(acme, listener, settings):
    settings.DMARC_REPORT_MAX_BYTES = 64 * 1024
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("r.xml", b"<feedback>" + b"x" * (1024 * 1024))
    raw = report_mail(to="dmarc-reports@acme.test", sender="a@receiver.test", subject="Report", filename="r.zip",
                      content_type="application/zip", payload=buffer.getvalue())

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert code == 550 and b"unpacks to more than 65536 bytes" in reply


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<feedback><report_metadata><org_name>&lol3;</org_name><report_id>1</report_id></report_metadata></feedback>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE feedback [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<feedback><report_metadata><org_name>&secret;</org_name><report_id>1</report_id></report_metadata></feedback>"""


@pytest.mark.parametrize("xml", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["entity-expansion", "external-entity"])
def test_an_xml_entity_attack_is_refused_and_nothing_is_kept(acme, listener, xml):
    raw = report_mail(to="dmarc-reports@acme.test", sender="a@receiver.test", subject="Report",
                      filename="attack.xml.gz", content_type="application/gzip", payload=gzipped(xml))

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert (code, reply) == (550, b"5.6.0 Report not accepted: the DMARC report declares a DTD or entities; refused")
    assert DmarcReport.objects.count() == 0


def test_mail_without_a_report_is_refused(acme, listener):
    raw = b"From: spam@elsewhere.test\r\nTo: dmarc-reports@acme.test\r\nSubject: Hi\r\n\r\nBuy now.\r\n"

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert code == 550 and b"carries no DMARC or TLS report" in reply


def test_a_report_about_another_domain_is_refused(acme, listener):
    about_other = corpus("google.xml").replace(b"<domain>acme.test</domain>", b"<domain>other.test</domain>")
    raw = report_mail(to="dmarc-reports@acme.test", sender="noreply-dmarc-support@google.com", subject="Report",
                      filename="google.com!other.test!1!2.zip", content_type="application/zip",
                      payload=zipped("r.xml", about_other))

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert (code, reply) == (550, b"5.6.0 Report not accepted: the DMARC report is about other.test, not acme.test")
    assert DmarcReport.objects.count() == 0


def test_the_report_addresses_of_an_unverified_domain_are_not_hosted(partner, listener):
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        deliver(listener, google_dmarc("pending.test"), "dmarc-reports@pending.test")

    assert refused.value.recipients["dmarc-reports@pending.test"][0] == 550


def test_no_mailbox_or_alias_may_take_a_report_address(acme, partner):
    slots_grant(partner=partner, count=1)
    with pytest.raises(InvalidFields) as refused:
        partner_mailbox_create(partner=partner, domain=acme, local_part="dmarc-reports", password="mailbox-pass-1",
                               plan_id="pro", fund=lambda: slot_funding(partner=partner))
    assert refused.value.message_dict == {"local_part": ["dmarc-reports@ receives the domain's DMARC and TLS reports"]}
    ann = partner_mailbox_create(partner=partner, domain=acme, local_part="ann", password="mailbox-pass-1",
                                 plan_id="pro", fund=lambda: slot_funding(partner=partner)).mailbox
    with pytest.raises(InvalidFields):
        alias_create(mailbox=ann, alias_address="tls-reports@acme.test")
    assert list(Mailbox.objects.values_list("address", flat=True)) == ["ann@acme.test"]


def test_a_report_never_reaches_a_mailbox(acme, listener, partner):
    slots_grant(partner=partner, count=1)
    ann = partner_mailbox_create(partner=partner, domain=acme, local_part="ann", password="mailbox-pass-1",
                                 plan_id="pro", fund=lambda: slot_funding(partner=partner)).mailbox

    assert deliver(listener, google_dmarc(), "dmarc-reports@acme.test") == {}

    assert inbox(ann) == []


@pytest.mark.parametrize("change", [(b"<source_ip>192.0.2.10</source_ip>", b"<source_ip>relay.example</source_ip>"),
                                    (b"<count>120</count>", b"<count>99999999999</count>")],
                         ids=["source-not-an-ip", "count-out-of-range"])
def test_a_report_with_an_impossible_row_is_refused_for_good(acme, listener, change):
    raw = report_mail(to="dmarc-reports@acme.test", sender="noreply-dmarc-support@google.com", subject="Report",
                      filename="google.xml", content_type="text/xml", payload=corpus("google.xml").replace(*change))

    code, reply = refusal(listener, raw, "dmarc-reports@acme.test")

    assert code == 550 and reply.startswith(b"5.6.0 Report not accepted: a DMARC report row's")
    assert DmarcReport.objects.count() == 0
