"""Catch-all addresses and alias domains through the real Postfix (docker/postfix/: its lookup tables
with their queries unchanged) in front of the app's listener: what Postfix takes at RCPT is exactly
what the listener takes, and what it takes is stored in the right mailbox's Inbox."""
import smtplib
import subprocess

import pytest

from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.inbound.recipients import UNKNOWN_USER, resolve
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.routing import domain_catch_all_clear, domain_catch_all_set
from mailcore.store.models import StoredMessage
from testkit.factories import make_mailbox, make_message
from testkit.postfix import postfix
from testkit.smtp_sink import inbound_listener
from testkit.worker_process import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix reads the rows the test committed


@pytest.fixture
def primary(plans, alice, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    ann = make_mailbox(alice.account, "ann@primary.test")
    make_mailbox(alice.account, "catchall@primary.test")
    alias_create(mailbox=ann, alias_address="sales@primary.test")
    return ann.domain


@pytest.fixture
def alias_domain(primary):
    return domain_mark_verified(domain=domain_create(account=primary.account, name="alias.test", alias_of=primary))


@pytest.fixture
def mx(primary):
    with inbound_listener() as listener_port, postfix(lmtp=f"127.0.0.1:{listener_port}",
                                                       mynetworks="203.0.113.0/24") as instance:
        yield instance


def rcpt(instance, address: str) -> tuple[int, bytes]:
    with smtplib.SMTP("127.0.0.1", instance.ports["smtp"], timeout=30) as client:
        client.ehlo("sender.elsewhere.test")
        client.mail("someone@elsewhere.test")
        return client.rcpt(address)


def deliver(instance, address: str, subject: str) -> None:
    with smtplib.SMTP("127.0.0.1", instance.ports["smtp"], timeout=30) as client:
        client.ehlo("sender.elsewhere.test")
        assert client.sendmail("someone@elsewhere.test", [address], make_message(subject, to=address)) == {}


def inbox_subjects(address: str) -> list[str]:
    return sorted(StoredMessage.objects.filter(folder__mailbox__address=address, folder__name="INBOX")
                  .values_list("subject", flat=True))


def postfix_map(instance, key: str, table: str = "virtual-mailboxes.cf") -> str:
    """What one of Postfix's own lookup tables answers for `key` (its query as the instance runs it)."""
    kind = "pgsql" if (instance.directory / "maps" / table).read_text().startswith("hosts") else "sqlite"
    found = subprocess.run(["/usr/sbin/postmap", "-c", str(instance.config), "-q", key,
                            f"{kind}:{instance.directory / 'maps' / table}"], capture_output=True, text=True)
    return found.stdout.strip()


def test_with_a_catch_all_an_unknown_local_part_reaches_the_catch_all_mailbox(mx, primary):
    assert rcpt(mx, "made-up@primary.test")[0] == 550
    domain_catch_all_set(domain=primary, address="catchall@primary.test")

    deliver(mx, "made-up@primary.test", "To a made-up address")
    deliver(mx, "ann@primary.test", "To Ann herself")
    wait_until(lambda: len(inbox_subjects("catchall@primary.test")) == 1 and inbox_subjects("ann@primary.test"),
               timeout=30, what="both messages stored")
    assert inbox_subjects("catchall@primary.test") == ["To a made-up address"]
    assert inbox_subjects("ann@primary.test") == ["To Ann herself"]  # named addresses still win
    assert postfix_map(mx, "@primary.test") == "catchall@primary.test"


def test_without_a_catch_all_unknown_local_parts_are_refused_by_postfix_and_the_listener(mx, primary):
    domain_catch_all_set(domain=primary, address="catchall@primary.test")
    domain_catch_all_clear(domain=primary)

    code, text = rcpt(mx, "made-up@primary.test")
    assert (code, b"5.1.1" in text) == (550, True)
    assert postfix_map(mx, "@primary.test") == "" and resolve("made-up@primary.test") == UNKNOWN_USER
    assert inbox_subjects("catchall@primary.test") == []


def test_a_disabled_catch_all_mailbox_takes_nothing(mx, primary):
    domain_catch_all_set(domain=primary, address="catchall@primary.test")
    Mailbox.objects.filter(address="catchall@primary.test").update(is_active=False)

    assert rcpt(mx, "made-up@primary.test")[0] == 550
    assert postfix_map(mx, "@primary.test") == "" and resolve("made-up@primary.test") == UNKNOWN_USER


def test_a_forged_return_path_is_refused_even_with_a_catch_all(mx, primary):
    domain_catch_all_set(domain=primary, address="catchall@primary.test")

    code, text = rcpt(mx, "bounces+1-forged@primary.test")
    assert (code, b"5.1.1" in text) == (550, True)
    assert resolve("bounces+1-forged@primary.test") == UNKNOWN_USER


def test_mail_to_an_alias_domain_is_stored_in_the_primarys_mailboxes(mx, primary, alias_domain):
    deliver(mx, "ann@alias.test", "To ann at the alias domain")
    deliver(mx, "sales@alias.test", "To an alias at the alias domain")
    deliver(mx, "ann+news@alias.test", "To a subaddress at the alias domain")
    wait_until(lambda: len(inbox_subjects("ann@primary.test")) == 3, timeout=30, what="three messages stored")
    assert inbox_subjects("ann@primary.test") == [
        "To a subaddress at the alias domain", "To an alias at the alias domain", "To ann at the alias domain"]
    assert postfix_map(mx, "ann@alias.test") == "ann@primary.test"
    assert postfix_map(mx, "sales@alias.test") == "ann@primary.test"
    assert resolve("ann@alias.test").mailbox.address == "ann@primary.test"


def test_an_alias_domain_follows_its_primarys_catch_all(mx, primary, alias_domain):
    assert rcpt(mx, "made-up@alias.test")[0] == 550
    domain_catch_all_set(domain=primary, address="catchall@primary.test")

    deliver(mx, "made-up@alias.test", "Made up, alias domain")
    wait_until(lambda: inbox_subjects("catchall@primary.test"), timeout=30, what="the message stored")
    assert inbox_subjects("catchall@primary.test") == ["Made up, alias domain"]
    assert postfix_map(mx, "@alias.test") == "catchall@primary.test"


def test_a_disabled_mailbox_answers_the_same_on_the_alias_domain(mx, primary, alias_domain):
    Mailbox.objects.filter(address="ann@primary.test").update(is_active=False)
    domain_catch_all_set(domain=primary, address="catchall@primary.test")

    code, text = rcpt(mx, "ann@alias.test")
    assert (code, b"5.2.1" in text) == (550, True)
    assert postfix_map(mx, "ann@alias.test", "recipient-access.cf").startswith("550 5.2.1")


def test_an_unverified_alias_domain_receives_nothing(mx, primary):
    domain_create(account=primary.account, name="alias.test", alias_of=primary)

    code, _ = rcpt(mx, "ann@alias.test")
    assert code >= 550
    assert postfix_map(mx, "ann@alias.test") == "" and postfix_map(mx, "alias.test", "virtual-domains.cf") == ""
    assert resolve("ann@alias.test").code == 550
    assert inbox_subjects("ann@primary.test") == []


def test_an_alias_of_an_unverified_primary_receives_nothing(mx, primary, alias_domain):
    primary.status = primary.Status.FAILED
    primary.save()

    assert rcpt(mx, "ann@alias.test")[0] == 550
    assert postfix_map(mx, "ann@alias.test") == "" and resolve("ann@alias.test") == UNKNOWN_USER
