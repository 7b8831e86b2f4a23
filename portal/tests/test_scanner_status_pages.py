"""Which scanners are on, where the operator looks: the console's first page (asked fresh) and the
webmail's footer (for the operator only: staff signed in on this host, or anyone on a development
machine, where whoever ran `make run` is the operator). /readyz is in test_ops.py."""
import pytest

from portal.tests.conftest import WEBMAIL_PASSWORD
from portal.tests.test_operator_console import CONSOLE, HTML, sign_in
from testkit.factories import make_mailbox
from testkit.smtp_sink import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

    from testkit.factories import UserFactory

    staff = UserFactory(email="olive@mailwell.test", is_staff=True, is_superuser=True)
    secret = generate_totp_secret()
    TOTP.activate(staff, secret)
    sign_in(client, staff, secret)
    return client


def scanner_rows(page: str) -> str:
    start = page.index('id="scanners"')
    return page[start:page.index("</div>", start)]


def test_the_console_says_every_scanner_is_on(operator, rspamd_settings):
    page = operator.get(CONSOLE, **HTML).content.decode()

    rows = scanner_rows(page)
    assert "<th scope=\"row\">Spam scanning (rspamd)</th><td>On</td>" in rows
    assert "<th scope=\"row\">Virus scanning (ClamAV)</th><td>On</td>" in rows
    assert "<th scope=\"row\">Learning (Bayes)</th><td>On</td>" in rows
    assert "rspamd: spam scanning on, virus scanning on, learning on" in rows


def test_the_console_says_plainly_when_scanning_is_off(operator, settings):
    settings.RSPAMD_URL = ""

    rows = scanner_rows(operator.get(CONSOLE, **HTML).content.decode())

    assert "<th scope=\"row\">Spam scanning (rspamd)</th><td>Off</td>" in rows
    assert "Scanning is off: RSPAMD_URL is not set, so inbound mail is not scanned for spam or viruses." in rows


def test_the_console_says_when_rspamd_is_down_and_mail_is_deferred(operator, settings):
    settings.RSPAMD_URL = f"http://127.0.0.1:{free_port()}"

    rows = scanner_rows(operator.get(CONSOLE, **HTML).content.decode())

    assert "<th scope=\"row\">Spam scanning (rspamd)</th><td>DOWN: mail is deferred (451)</td>" in rows


@pytest.fixture
def mailbox(settings, alice):
    settings.MAIL_STORE = "embedded"
    return make_mailbox(alice.account, "ann@example.test", password=WEBMAIL_PASSWORD)


def webmail_page(client, mailbox) -> str:
    assert client.post("/webmail/", {"address": mailbox.address, "password": WEBMAIL_PASSWORD}).status_code == 302
    return client.get("/webmail/inbox/", **HTML).content.decode()


FOOTER = '<footer class="webmail-footer"'


def test_in_production_a_mailbox_owner_sees_no_scanner_footer(client, settings, mailbox):
    settings.PRODUCTION = True
    settings.RSPAMD_URL = ""

    page = webmail_page(client, mailbox)

    assert FOOTER not in page
    assert "Scanning is off" not in page


def test_in_production_the_operator_signed_in_sees_which_scanners_are_on_in_the_webmail_footer(
        operator, settings, mailbox, rspamd_settings):
    settings.PRODUCTION = True

    page = webmail_page(operator, mailbox)

    assert FOOTER in page
    assert "Operator: rspamd: spam scanning on, virus scanning on, learning on" in page


def test_on_a_development_machine_the_footer_says_scanning_is_off(client, settings, mailbox):
    settings.RSPAMD_URL = ""

    page = webmail_page(client, mailbox)

    assert "Operator: Scanning is off: RSPAMD_URL is not set, so inbound mail is not scanned for spam or viruses." in page
