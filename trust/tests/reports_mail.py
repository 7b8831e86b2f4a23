"""The report corpus (trust/tests/corpus: real-format reports from several receivers) wrapped in
mail the way each receiver delivers it: a short text part and the report attached as .zip, .xml.gz,
.xml or .json.gz, from the receiver's own address."""
import gzip
import io
import zipfile
from email.message import EmailMessage
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"


def corpus(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def zipped(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(member, data)
    return buffer.getvalue()


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def report_mail(*, to: str, sender: str, subject: str, filename: str, content_type: str, payload: bytes) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = f"<{filename}@{sender.rpartition('@')[2]}>"
    message["Date"] = "Thu, 05 Nov 2026 06:00:00 +0000"
    message.set_content(f"This is an aggregate report from {sender.rpartition('@')[2]}.")
    maintype, _, subtype = content_type.partition("/")
    message.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes(policy=message.policy.clone(linesep="\r\n"))


def google_dmarc(domain: str = "acme.test") -> bytes:
    name = f"google.com!{domain}!1793664000!1793750399"
    return report_mail(to=f"dmarc-reports@{domain}", sender="noreply-dmarc-support@google.com",
                       subject=f"Report domain: {domain} Submitter: google.com Report-ID: 13906523588412877419",
                       filename=f"{name}.zip", content_type="application/zip",
                       payload=zipped(f"{name}.xml", corpus("google.xml")))


def microsoft_dmarc(domain: str = "acme.test") -> bytes:
    return report_mail(to=f"dmarc-reports@{domain}", sender="dmarcreport@microsoft.com",
                       subject=f"Report Domain: {domain} Submitter: enterprise.protection.outlook.com "
                               "Report-ID: <7d1c2b0ba6e84a33b1e4f2d2a5c9e6f1@enterprise.protection.outlook.com>",
                       filename=f"enterprise.protection.outlook.com!{domain}!1793664000!1793750400.xml.gz",
                       content_type="application/gzip", payload=gzipped(corpus("microsoft.xml")))


def yahoo_dmarc(domain: str = "acme.test") -> bytes:
    return report_mail(to=f"dmarc-reports@{domain}", sender="dmarchelp@yahooinc.com",
                       subject=f"Report Domain: {domain} Submitter: Yahoo Report-ID: <1793750400.486351>",
                       filename=f"yahoo.com!{domain}!1793750400!1793836799.xml.gz",
                       content_type="application/gzip", payload=gzipped(corpus("yahoo.xml")))


def dmarc2_report(domain: str = "acme.test") -> bytes:
    return report_mail(to=f"dmarc-reports@{domain}", sender="dmarc-reports@messagingengine.com",
                       subject=f"Report Domain: {domain} Submitter: fastmail.com",
                       filename=f"fastmail.com!{domain}!1793750400!1793836799.xml", content_type="text/xml",
                       payload=corpus("dmarc2.xml"))


def google_tlsrpt(domain: str = "acme.test") -> bytes:
    return report_mail(to=f"tls-reports@{domain}", sender="noreply-smtp-tls-reporting@google.com",
                       subject=f"Report Domain: {domain} Submitter: google.com Report-ID: <2026.11.03T00.00.00Z+"
                               f"{domain}@google.com>",
                       filename=f"google.com!{domain}!20261103T000000Z!20261103T235959Z!001.json.gz",
                       content_type="application/tlsrpt+gzip", payload=gzipped(corpus("google-tlsrpt.json")))


def microsoft_tlsrpt(domain: str = "acme.test") -> bytes:
    return report_mail(to=f"tls-reports@{domain}", sender="tlsrpt-noreply@microsoft.com",
                       subject=f"Report Domain: {domain} Submitter: microsoft.com",
                       filename=f"microsoft.com!{domain}!1793664000!1793750399.json.gz",
                       content_type="application/tlsrpt+gzip", payload=gzipped(corpus("microsoft-tlsrpt.json")))


DMARC_CORPUS = (google_dmarc, microsoft_dmarc, yahoo_dmarc, dmarc2_report)
TLS_CORPUS = (google_tlsrpt, microsoft_tlsrpt)
