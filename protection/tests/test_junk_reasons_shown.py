"""The webmail's "Why this is in Junk" panel: the reasons and score the screening wrote on the stored
copy, in plain words, on a message in Junk only, and only from a junk verdict of ours."""
import pytest

from mailcore.store.factory import store_for
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

ADDRESS = "ann@example.test"
PASSWORD = "mailbox-password-1"
REASONS = ("The sender's domain says mail like this is suspect (DMARC). | "
           "The server that sent it is not allowed to send for the sender's domain (SPF).")


def raw(*, action: str = "junk", reasons: str = REASONS) -> bytes:
    ours = f"X-Spam-Score: 6.2\r\nX-Spam-Action: {action}\r\n" + (f"X-Mailwell-Reasons: {reasons}\r\n" if reasons else "")
    return (f"{ours}From: Shop <news@shop.test>\r\nTo: {ADDRESS}\r\nSubject: Big sale\r\n"
            "Message-ID: <sale-1@shop.test>\r\nDate: Sun, 29 Nov 2026 03:00:00 +0000\r\n\r\nEverything must go.\r\n"
            ).encode()


@pytest.fixture
def signed_in(alice, settings, tmp_path, client):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    mailbox = make_mailbox(alice.account, ADDRESS, password=PASSWORD)
    store_for(mailbox).ensure_folders()
    assert client.post("/webmail/", {"address": ADDRESS, "password": PASSWORD}).status_code == 302
    return store_for(mailbox)


def page(client, folder: str, uid: int) -> str:
    response = client.get(f"/webmail/folders/{folder}/messages/{uid}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_message_the_screening_put_in_junk_says_why_in_plain_words(signed_in, client):
    shown = page(client, "Junk", signed_in.append("Junk", raw()))
    assert "Why this is in Junk" in shown
    assert "<li>The sender&#x27;s domain says mail like this is suspect (DMARC).</li>" in shown
    assert "<li>The server that sent it is not allowed to send for the sender&#x27;s domain (SPF).</li>" in shown
    assert "Spam score: 6.2" in shown
    assert "always let in news@shop.test" in shown
    assert 'value="not_spam"' in shown


def test_without_reasons_the_panel_still_says_the_filter_scored_it(signed_in, client):
    shown = page(client, "Junk", signed_in.append("Junk", raw(reasons="")))
    assert "Why this is in Junk" in shown and "Your spam filter scored it as likely spam." in shown


def test_no_panel_outside_junk_nor_for_a_message_moved_there_by_hand(signed_in, client):
    assert "Why this is in Junk" not in page(client, "INBOX", signed_in.append("INBOX", raw()))
    assert "Why this is in Junk" not in page(client, "Junk", signed_in.append("Junk", raw(action="inbox")))
