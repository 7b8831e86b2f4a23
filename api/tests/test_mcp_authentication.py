"""The agent tools carry each message's sender checks (`authentication`), read from the
Authentication-Results header we add on arrival: ours, outside the sender's `untrusted` words."""
import pytest
from django.conf import settings

from api.tests.test_mcp import ADDRESS, ALL_SCOPES, call, output_valid
from mailcore.store.factory import store_for
from testkit.clients import new_key
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, ADDRESS)


@pytest.fixture
def key(alice, mailbox):
    return new_key(alice, scopes=ALL_SCOPES)

SPOOFED = (f"Authentication-Results: {settings.MAIL_HOST}; spf=fail smtp.mailfrom=service@paypal.com; dkim=none; "
           "dmarc=fail (p=quarantine) header.from=paypal.com; arc=none\n").encode()


def test_list_recent_messages_says_which_message_failed_its_sender_checks(api, key, mailbox):
    store = store_for(mailbox)
    spoofed = store.append("INBOX", SPOOFED + make_message("Your account", sender="PayPal <service@paypal.com>"))
    unchecked = store.append("INBOX", make_message("Hello"))
    content = output_valid("list_recent_messages", call(api, key, "list_recent_messages", {"email": ADDRESS}))
    by_uid = {message["uid"]: message for message in content["messages"]}
    assert by_uid[spoofed]["authentication"] == {"spf": "fail", "dkim": "none", "dmarc": "fail", "arc": "none"}
    assert by_uid[unchecked]["authentication"] is None
    assert "authentication" not in by_uid[spoofed]["untrusted"]


def test_search_emails_carries_the_checks_too(api, key, mailbox):
    store_for(mailbox).append("INBOX", SPOOFED + make_message("Quarterly numbers"))
    content = output_valid("search_emails", call(api, key, "search_emails", {"email": ADDRESS, "q": "Quarterly"}))
    [found] = content["messages"]
    assert found["authentication"]["dmarc"] == "fail"
