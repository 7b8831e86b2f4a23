"""Dovecot as mailbox owners' IMAP clients and the app's inbound path see it: the owner's own
password, disabled mailboxes, per-mailbox quota from the plan, LMTP delivery."""
import imaplib
import ssl
import time
import smtplib

import pytest

from mailcore.accounts.models import Plan
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import DEFAULT_FOLDERS, QuotaExceeded, StoreUnavailable
from mailcore.store.factory import store_for
from testkit.dovecot import Dovecot, managed_mailbox, message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "owner password 1"


@pytest.fixture
def mailbox(plans, imap_settings) -> Mailbox:
    return managed_mailbox(password=PASSWORD)


def owner_login(dovecot: Dovecot, username: str, password: str) -> imaplib.IMAP4:
    client = imaplib.IMAP4(dovecot.host, dovecot.imap_port, timeout=10)
    try:
        client.login(username, password)
    except imaplib.IMAP4.error:
        client.shutdown()
        raise
    return client


def quota(client: imaplib.IMAP4) -> bytes:
    typ, data = client.getquotaroot("INBOX")
    assert typ == "OK"
    return data[1][0]


def tiny_plan() -> Plan:
    return Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=1, sends_per_hour=1, storage_mb=1,
                               attachment_max_mb=1)


def test_the_owner_sees_the_folders_and_messages_the_store_wrote(mailbox, imap_settings):
    store = store_for(mailbox)
    first = store.append("INBOX", message("first"))
    raw = message("second")
    second = store.append("INBOX", raw)

    client = owner_login(imap_settings, mailbox.address, PASSWORD)
    _, listed = client.list()
    client.select("INBOX", readonly=True)
    _, found = client.uid("SEARCH", "ALL")
    _, fetched = client.uid("FETCH", str(second), "(BODY.PEEK[])")
    client.logout()

    assert sorted(line.rsplit(b" ", 1)[1].decode() for line in listed) == sorted(DEFAULT_FOLDERS)
    assert found == [f"{first} {second}".encode()]
    assert fetched[0][1] == raw


def test_the_server_offers_what_the_store_relies_on(mailbox, imap_settings):
    client = owner_login(imap_settings, mailbox.address, PASSWORD)
    _, capabilities = client.capability()
    client.select("INBOX")
    permanent_flags = client.untagged_responses["PERMANENTFLAGS"][0]
    client.logout()

    assert {b"MOVE", b"UIDPLUS", b"SPECIAL-USE", b"QUOTA"} <= set(capabilities[-1].split())
    assert b"\\*" in permanent_flags  # any keyword may be stored: labels are keywords


def test_a_message_keeps_more_keywords_than_maildir_has_letters(mailbox):
    store = store_for(mailbox)
    labels = tuple(f"$label{n}" for n in range(30))  # maildir file names hold 26 (a-z)

    uid = store.append("INBOX", message("many labels"), flags=labels)

    assert sorted(store.fetch("INBOX", uid).flags) == sorted(labels)
    assert store.list("INBOX", keyword="$label29").total == 1


def test_the_owner_may_type_the_address_in_any_case(mailbox, imap_settings):
    client = owner_login(imap_settings, mailbox.address.upper(), PASSWORD)

    assert client.state == "AUTH"
    client.logout()


def test_a_wrong_password_is_refused(mailbox, imap_settings):
    with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):
        owner_login(imap_settings, mailbox.address, "not the password")


def test_a_wrong_master_password_is_refused(mailbox, settings):
    settings.DOVECOT_MASTER_PASSWORD = "not the master password"

    with pytest.raises(StoreUnavailable):
        store_for(mailbox).folders()


def test_the_master_user_logs_in_only_from_the_apps_network(plans, transactional_db, settings):
    """DOVECOT_MASTER_NETS: with the master password alone, from anywhere else, no mailbox opens."""
    from testkit.dovecot import start_dovecot, stop_dovecot

    mailbox = managed_mailbox(password=PASSWORD)
    elsewhere, process = start_dovecot(settings.DOVECOT_MASTER_USER, master_nets="192.0.2.0/24")
    try:
        with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):
            owner_login(elsewhere, f"{mailbox.address}*{elsewhere.master_user}", elsewhere.master_password)
        owner_login(elsewhere, mailbox.address, PASSWORD).logout()  # the owner's own login is not limited
    finally:
        stop_dovecot(elsewhere, process)


def test_a_disabled_mailbox_cannot_log_in_either_way(mailbox, imap_settings):
    store_for(mailbox).append("INBOX", message("kept"))
    Mailbox.objects.filter(pk=mailbox.pk).update(is_active=False)

    with pytest.raises(imaplib.IMAP4.error, match="AUTHENTICATIONFAILED"):
        owner_login(imap_settings, mailbox.address, PASSWORD)
    with pytest.raises(StoreUnavailable):
        store_for(mailbox).folders()

    Mailbox.objects.filter(pk=mailbox.pk).update(is_active=True)
    assert store_for(mailbox).list("INBOX").total == 1


def test_sent_keeps_one_copy_when_the_app_and_the_owners_client_both_save_it(mailbox, imap_settings):
    """Mail from the owner's own client: the app keeps a copy in Sent and the client saves its own
    over IMAP; whichever comes second is dropped (sent-once.sieve). Other folders keep both."""
    sent_first, client_first = message("App first"), message("Client first")
    store = store_for(mailbox)
    client = owner_login(imap_settings, mailbox.address, PASSWORD)
    store.append("Sent", sent_first, flags=("\\Seen",))
    client.append("Sent", "(\\Seen)", None, sent_first)
    client.append("Sent", "(\\Seen)", None, client_first)
    store.append("Sent", client_first, flags=("\\Seen",))
    store.append("Sent", message("Another"), flags=("\\Seen",))
    client.append("Archive", None, None, sent_first)
    client.append("Archive", None, None, sent_first)
    client.logout()

    assert sorted(m.subject for m in store.list("Sent").messages) == ["Another", "App first", "Client first"]
    assert [m.subject for m in store.list("Archive").messages] == ["App first", "App first"]


def test_the_quota_is_the_plans_storage(mailbox, imap_settings):
    client = owner_login(imap_settings, mailbox.address, PASSWORD)

    assert quota(client) == b'"User quota" (STORAGE 0 20971520)'  # premium: 20480 MB in KiB
    client.logout()


def test_extra_storage_adds_to_the_quota(mailbox, imap_settings):
    Mailbox.objects.filter(pk=mailbox.pk).update(extra_storage_mb=1024)

    client = owner_login(imap_settings, mailbox.address, PASSWORD)

    assert quota(client) == b'"User quota" (STORAGE 0 22020096)'
    client.logout()


def test_an_append_over_the_quota_is_refused(plans, imap_settings):
    mailbox = managed_mailbox(password=PASSWORD, plan=tiny_plan())
    store = store_for(mailbox)
    fits = store.append("INBOX", message("fits", pad_to=600 * 1024))

    with pytest.raises(QuotaExceeded):
        store.append("INBOX", message("too much", pad_to=600 * 1024))

    assert ([m.uid for m in store.list("INBOX").messages], store.storage_used()) == ([fits], 600 * 1024)
    client = owner_login(imap_settings, mailbox.address, PASSWORD)
    assert quota(client) == b'"User quota" (STORAGE 600 1024)'
    client.logout()


def test_lmtp_delivers_to_the_inbox(mailbox, imap_settings):
    raw = message("by lmtp")

    with smtplib.LMTP(imap_settings.host, imap_settings.lmtp_port, timeout=10) as lmtp:
        refused = lmtp.sendmail("bob@example.test", [mailbox.address], raw)

    summaries = store_for(mailbox).list("INBOX").messages
    assert (refused, [m.subject for m in summaries]) == ({}, ["by lmtp"])


def test_lmtp_refuses_an_unknown_or_disabled_recipient(mailbox, imap_settings):
    Mailbox.objects.filter(pk=mailbox.pk).update(is_active=False)

    with (smtplib.LMTP(imap_settings.host, imap_settings.lmtp_port, timeout=10) as lmtp,
          pytest.raises(smtplib.SMTPRecipientsRefused) as refused):
        lmtp.sendmail("bob@example.test", [mailbox.address], message("nobody home"))

    assert refused.value.recipients[mailbox.address][0] == 550


def test_lmtp_refuses_mail_that_would_cross_the_quota(plans, imap_settings):
    mailbox = managed_mailbox(password=PASSWORD, plan=tiny_plan())
    store_for(mailbox).append("INBOX", message("nearly full", pad_to=1000 * 1024))

    with (smtplib.LMTP(imap_settings.host, imap_settings.lmtp_port, timeout=10) as lmtp,
          pytest.raises(smtplib.SMTPDataError) as refused):
        lmtp.sendmail("bob@example.test", [mailbox.address], message("one more", pad_to=100 * 1024))

    assert refused.value.smtp_code == 552  # permanent: the sender gets a bounce, not a retry
    assert store_for(mailbox).list("INBOX").total == 1


@pytest.fixture
def penalised(plans, transactional_db, settings):
    """A Dovecot with production's auth settings: failures are answered late, and later still from
    an address that keeps failing (the anvil auth penalty)."""
    from testkit.dovecot import start_dovecot, stop_dovecot

    instance, process = start_dovecot(settings.DOVECOT_MASTER_USER, penalty=True)
    try:
        yield instance
    finally:
        stop_dovecot(instance, process)


def timed_login(dovecot: Dovecot, username: str, password: str) -> tuple[str, float]:
    client = imaplib.IMAP4(dovecot.host, dovecot.imap_port, timeout=40)
    started = time.monotonic()
    try:
        client.login(username, password)
        outcome = "OK"
    except imaplib.IMAP4.error as refused:
        outcome = str(refused)
    elapsed = time.monotonic() - started
    client.shutdown()
    return outcome, elapsed


def test_password_guessing_over_imap_is_slowed_by_dovecots_auth_penalty(penalised):
    mailbox = managed_mailbox(password=PASSWORD)

    tries = [timed_login(penalised, mailbox.address, f"guess {n}") for n in range(2)]
    right = timed_login(penalised, mailbox.address, PASSWORD)

    assert all("AUTHENTICATIONFAILED" in outcome for outcome, _ in tries), tries
    assert tries[0][1] >= 1.5  # every failure waits (auth_failure_delay, 2 s)
    assert tries[1][1] >= 2 * tries[0][1], tries  # and longer as failures from the address go on (2 s, 4 s, ...)
    assert right[0] == "OK" and right[1] >= tries[0][1]  # the owner is slowed too, never locked out


@pytest.fixture
def with_tls(plans, transactional_db, settings):
    """A Dovecot with production's TLS settings: IMAPS, and no password over an unencrypted session."""
    from testkit.dovecot import start_dovecot, stop_dovecot

    instance, process = start_dovecot(settings.DOVECOT_MASTER_USER, tls=True)
    try:
        yield instance
    finally:
        stop_dovecot(instance, process)


def test_owners_read_their_mail_over_imaps_with_a_certificate_their_client_verifies(with_tls):
    """(Dovecot counts loopback sessions as secure, so the plaintext refusal production's
    `disable_plaintext_auth = yes` gives a remote client cannot be shown from here.)"""
    mailbox = managed_mailbox(password=PASSWORD)
    context = ssl.create_default_context(cafile=str(with_tls.directory / "tls-cert.pem"))

    with imaplib.IMAP4_SSL("localhost", with_tls.imaps_port, ssl_context=context, timeout=10) as client:
        assert client.login(mailbox.address, PASSWORD)[0] == "OK"
        assert client.select("INBOX")[0] == "OK"
    with pytest.raises(ssl.SSLCertVerificationError):  # a client that does not trust the certificate stops
        imaplib.IMAP4_SSL("localhost", with_tls.imaps_port, ssl_context=ssl.create_default_context(), timeout=10)
    with imaplib.IMAP4(with_tls.host, with_tls.imap_port, timeout=10) as upgraded:  # port 143: STARTTLS
        assert upgraded.starttls(ssl_context=context)[0] == "OK"
        assert upgraded.login(mailbox.address, PASSWORD)[0] == "OK"
