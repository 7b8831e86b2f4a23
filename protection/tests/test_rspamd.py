"""protection/rspamd.py against the suite's real rspamd (docker/rspamd/), clamd with the EICAR
signature behind it, and DNS answered only by the loopback DNS server."""
import base64
import uuid

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from protection import rspamd
from testkit.clamd import EICAR
from testkit.rspamd import BAYES_MIN_LEARNS, GREYLIST_DELAY_SECONDS, GTUBE

pytestmark = pytest.mark.usefixtures("rspamd_settings")

SPOOFER_IP = "203.0.113.66"
PAYPAL_IP = "192.0.2.25"


def message(*, sender: str = "Service <service@paypal.test>", subject: str = "Your account", body: str = "",
            extra: str = "") -> bytes:
    """A message of its own: rspamd's greylisting knows a message again by its body."""
    body = body or f"Hello, this is message {uuid.uuid4().hex}."
    return (f"From: {sender}\r\nTo: ann@example.test\r\nSubject: {subject}\r\n"
            f"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@paypal.test>\r\n"
            f"MIME-Version: 1.0\r\n{extra}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()


def scan(raw: bytes, *, ip: str = SPOOFER_IP, sender: str = "service@paypal.test", to: str = "") -> rspamd.Scan:
    """Each scan to a recipient of its own: greylisting knows an (IP, sender, recipient) again."""
    to = to or f"{uuid.uuid4().hex[:10]}@example.test"
    return rspamd.check(raw, client_ip=ip, helo="mx.sender.test", envelope_from=sender, recipients=[to])


def publish_paypal(dns_zone, policy: str) -> None:
    dns_zone.set("paypal.test", "TXT", f"v=spf1 ip4:{PAYPAL_IP} -all")
    dns_zone.set("_dmarc.paypal.test", "TXT", f"v=DMARC1; p={policy}")
    dns_zone.set("paypal.test", "MX", "10 mx.paypal.test")
    dns_zone.set("mx.paypal.test", "A", PAYPAL_IP)


def test_the_gtube_string_scores_15_and_rspamd_says_reject():
    result = scan(message(body=GTUBE, subject="GTUBE"))

    assert result.score == 15.0
    assert result.action == "reject"
    assert "GTUBE" in result.symbols
    assert not result.is_virus


def with_attachment(content: bytes, filename: str = "invoice.bin") -> bytes:
    return (f"From: Service <service@paypal.test>\r\nTo: ann@example.test\r\nSubject: Invoice\r\n"
            f"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@paypal.test>\r\n"
            'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
            f"--b\r\nContent-Type: text/plain\r\n\r\nSee attached ({uuid.uuid4().hex}).\r\n--b\r\n"
            f'Content-Type: application/octet-stream; name="{filename}"\r\n'
            f'Content-Disposition: attachment; filename="{filename}"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
            f"{base64.b64encode(content).decode()}\r\n--b--\r\n").encode()


def test_eicar_is_found_by_clamd_through_the_antivirus_module_with_its_name():
    raw = with_attachment(EICAR)

    result = scan(raw)

    assert result.is_virus
    assert result.virus == "Eicar-Test-Signature"
    assert result.action == "reject"
    assert not result.antivirus_failed


def test_a_clean_attachment_is_scanned_and_not_a_virus():
    result = scan(with_attachment(b"Minutes of the meeting: budget, hiring, the office move."), ip=PAYPAL_IP)

    assert not result.is_virus
    assert result.virus == ""
    assert not result.antivirus_failed


def test_spf_and_dmarc_are_looked_up_on_the_loopback_dns_a_spoof_fails_with_p_reject(dns_zone):
    publish_paypal(dns_zone, "reject")

    result = scan(message())

    assert (result.spf, result.dkim, result.dmarc, result.arc) == ("fail", "none", "fail", "none")
    assert result.dmarc_policy == "reject"


def test_the_same_message_from_the_domains_own_server_passes_spf_and_dmarc(dns_zone):
    publish_paypal(dns_zone, "reject")

    result = scan(message(), ip=PAYPAL_IP)

    assert (result.spf, result.dmarc) == ("pass", "pass"), result
    assert result.dmarc_policy == ""


def test_p_quarantine_is_reported_as_the_failing_domains_policy(dns_zone):
    publish_paypal(dns_zone, "quarantine")

    result = scan(message())

    assert result.dmarc == "fail"
    assert result.dmarc_policy == "quarantine"


def test_a_domain_without_records_has_no_spf_and_no_dmarc(dns_zone):
    result = scan(message(sender="Someone <someone@nowhere.test>"), sender="someone@nowhere.test")

    assert (result.spf, result.dkim, result.dmarc) == ("none", "none", "none")


def test_a_dkim_signature_whose_key_is_on_the_loopback_dns_passes(dns_zone):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    dns_zone.set("sel1._domainkey.signed.test", "TXT", f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}")
    raw = message(sender="News <news@signed.test>", body="Our news of the week.")
    signature = dkim.sign(raw, b"sel1", b"signed.test", private, include_headers=[b"from", b"to", b"subject", b"date"])

    result = scan(signature + raw, sender="news@signed.test")

    assert result.dkim == "pass"
    assert result.dkim_domains == ("signed.test",)


def test_a_tampered_dkim_signed_message_fails_dkim(dns_zone):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    dns_zone.set("sel1._domainkey.signed.test", "TXT", f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}")
    raw = message(sender="News <news@signed.test>", body="Our news of the week.")
    signature = dkim.sign(raw, b"sel1", b"signed.test", private, include_headers=[b"from", b"to", b"subject", b"date"])

    result = scan(signature + raw.replace(b"Our news", b"Pay now"), sender="news@signed.test")

    assert result.dkim == "fail"
    assert result.dkim_domains == ()


def learning_message(number: int) -> bytes:
    words = " ".join(f"cheap{number % 3} pills offer{number % 5} winner bonus casino credit" for _ in range(6))
    return message(sender="Promo <promo@bulk.test>", subject=f"Offer {number}", body=words)


def test_learning_counts_for_one_mailbox_scope_and_leaves_another_alone():
    scope, other = f"{uuid.uuid4().hex[:10]}@example.test", f"{uuid.uuid4().hex[:10]}@example.test"
    assert rspamd.bayes_counts(scope) == {"ham": 0, "spam": 0}

    rspamd.learn(learning_message(1), spam=True, scope=scope)
    rspamd.learn(learning_message(2), spam=True, scope=scope)
    rspamd.learn(message(body="Lunch on Tuesday? The usual place at noon, bring the slides."), spam=False,
                 scope=scope)

    assert rspamd.bayes_counts(scope) == {"ham": 1, "spam": 2}
    assert rspamd.bayes_counts(other) == {"ham": 0, "spam": 0}


def test_once_a_mailbox_has_learned_enough_its_bayes_scores_the_next_such_message_as_spam():
    scope = f"{uuid.uuid4().hex[:10]}@example.test"
    for number in range(BAYES_MIN_LEARNS + 1):
        rspamd.learn(learning_message(number), spam=True, scope=scope)
        rspamd.learn(message(body=f"Minutes of meeting {number}: budget review, hiring plan, office move "
                                  "and the quarterly report for the board, see you Thursday."),
                     spam=False, scope=scope)

    mine = rspamd.check(learning_message(99), client_ip=SPOOFER_IP, helo="mx.bulk.test",
                        envelope_from="promo@bulk.test", recipients=[scope])
    theirs = rspamd.check(learning_message(99), client_ip=SPOOFER_IP, helo="mx.bulk.test",
                          envelope_from="promo@bulk.test", recipients=[f"{uuid.uuid4().hex[:10]}@example.test"])

    assert "BAYES_SPAM" in mine.symbols
    assert "BAYES_SPAM" not in theirs.symbols
    assert mine.score > theirs.score


def test_a_suspicious_first_message_is_greylisted_and_its_retry_after_the_delay_is_not(dns_zone):
    import time

    publish_paypal(dns_zone, "none")
    raw = message(subject="URGENT verify your account now", body="Click here to verify your account password.")

    recipient = f"{uuid.uuid4().hex[:10]}@example.test"

    def attempt() -> rspamd.Scan:
        return rspamd.check(raw, client_ip="198.51.100.7", helo="unknown", envelope_from="service@paypal.test",
                            recipients=[recipient])

    first = attempt()
    assert 4 <= first.score < 15, f"this message scores {first.score}, outside the greylist band"
    assert first.greylisted
    assert first.action == "soft reject"
    time.sleep(GREYLIST_DELAY_SECONDS + 1)
    assert not attempt().greylisted


def test_state_says_every_scanner_is_on():
    state = rspamd.state()

    assert (state.configured, state.rspamd, state.clamav, state.bayes) == (True, True, True, True)
    assert state.problems == ()
    assert state.summary == "rspamd: spam scanning on, virus scanning on, learning on"


def test_with_no_rspamd_url_scanning_is_off_and_a_check_is_refused_plainly(settings):
    settings.RSPAMD_URL = ""

    state = rspamd.state()
    with pytest.raises(rspamd.ScannerUnavailable, match="Scanning is off"):
        scan(message())

    assert (state.configured, state.rspamd, state.clamav) == (False, False, False)
    assert "Scanning is off" in state.summary


def test_an_rspamd_that_does_not_answer_raises_scanner_unavailable_and_state_says_so(settings):
    from protection.local_scanners import free_port

    settings.RSPAMD_URL = f"http://127.0.0.1:{free_port()}"

    with pytest.raises(rspamd.ScannerUnavailable, match="did not answer"):
        scan(message())
    state = rspamd.state()

    assert state.rspamd is False
    assert any("does not answer" in problem for problem in state.problems)


def test_a_wrong_controller_password_is_refused_not_ignored(settings):
    settings.RSPAMD_PASSWORD = "wrong"

    with pytest.raises(rspamd.ScannerUnavailable, match="403|401"):
        rspamd.learn(learning_message(3), spam=True, scope="ann@example.test")


@pytest.fixture
def use_instance(settings):
    def use(instance) -> None:
        settings.RSPAMD_URL, settings.RSPAMD_CONTROLLER_URL = instance.url, instance.controller_url
        settings.RSPAMD_PASSWORD, settings.RSPAMD_REDIS_URL = instance.password, instance.redis_url
    return use


def test_without_clamd_the_scanner_says_virus_scanning_is_off_and_still_scans(_dns_server, use_instance):
    from testkit.rspamd import start_test_rspamd, stop_test_rspamd

    instance = start_test_rspamd(dns_port=_dns_server[1], clamd=None)
    try:
        use_instance(instance)
        state = rspamd.state()
        result = scan(with_attachment(EICAR))
    finally:
        stop_test_rspamd(instance)

    assert (state.rspamd, state.antivirus_configured, state.clamav, state.bayes) == (True, False, False, True)
    assert state.summary == "rspamd: spam scanning on, virus scanning off, learning on"
    assert not result.is_virus and not result.antivirus_failed


def test_when_clamd_stops_a_scan_says_the_antivirus_failed_and_state_says_it_is_down(_dns_server, use_instance,
                                                                                     tmp_path):
    from protection.local_scanners import start_clamd, stop, write_eicar_database
    from testkit.rspamd import start_test_rspamd, stop_test_rspamd

    write_eicar_database(tmp_path / "signatures")
    own_clamd = start_clamd(tmp_path / "clamd", tmp_path / "signatures")
    instance = start_test_rspamd(dns_port=_dns_server[1], clamd=own_clamd)
    try:
        use_instance(instance)
        before = rspamd.state()
        stop(own_clamd.process)
        after = rspamd.state()
        result = scan(with_attachment(b"A harmless attachment."))
    finally:
        stop_test_rspamd(instance)
        stop(own_clamd.process)

    assert before.clamav is True
    assert (after.rspamd, after.antivirus_configured, after.clamav) == (True, True, False)
    assert after.summary.startswith("rspamd: spam scanning on, virus scanning DOWN, learning on. clamd does not answer")
    assert result.antivirus_failed and not result.is_virus
