"""GET /inbox/{uid} carries `authentication` {spf, dkim, dmarc, arc}, read from the Authentication-Results
header we add to a stored copy, and the plain-words warning the webmail shows when DMARC failed."""
import pytest
from django.conf import settings

from mailcore.store.factory import store_for
from testkit.factories import make_mailbox, make_message

pytestmark = pytest.mark.django_db

ADDRESS = "inbox@example.test"


@pytest.fixture
def store(alice):
    return store_for(make_mailbox(alice.account, ADDRESS))


def stored(store, results: str | None, *, sender: str = "PayPal <service@paypal.com>", extra: bytes = b"") -> int:
    header = f"Authentication-Results: {results}\n".encode() if results else b""
    return store.append("INBOX", header + extra + make_message("Your account", sender=sender))


def test_a_message_that_passed_shows_its_results_and_no_warning(alice_api, store):
    uid = stored(store, f"{settings.MAIL_HOST}; spf=pass smtp.mailfrom=service@paypal.com; dkim=pass "
                        "header.d=paypal.com; dmarc=pass header.from=paypal.com; arc=none")
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert message["authentication"] == {"spf": "pass", "dkim": "pass", "dmarc": "pass", "arc": "none"}
    assert message["authentication_warning"] == ""


def test_a_spoofed_sender_shows_the_failure_and_the_warning(alice_api, store):
    uid = stored(store, f"{settings.MAIL_HOST}; spf=fail smtp.mailfrom=service@paypal.com; dkim=none; "
                        "dmarc=fail (p=quarantine) header.from=paypal.com; arc=none")
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert message["authentication"] == {"spf": "fail", "dkim": "none", "dmarc": "fail", "arc": "none"}
    assert message["authentication_warning"].startswith(
        "This message claims to be from paypal.com but was not sent by paypal.com's servers.")


def test_a_header_another_server_wrote_is_not_ours(alice_api, store):
    uid = stored(store, "mx.elsewhere.example; spf=pass; dkim=pass; dmarc=pass")
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert (message["authentication"], message["authentication_warning"]) == (None, "")


def test_another_servers_header_below_ours_changes_nothing(alice_api, store):
    """Ours is the first (protection adds it on top and removes any that claimed our name on arrival)."""
    uid = stored(store, f"{settings.MAIL_HOST}; spf=softfail; dkim=pass header.d=paypal.com; dmarc=pass; arc=pass",
                 extra=b"Authentication-Results: mx.elsewhere.example; dmarc=fail\n")
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert message["authentication"] == {"spf": "softfail", "dkim": "pass", "dmarc": "pass", "arc": "pass"}


def test_a_message_without_our_header_has_null_authentication(alice_api, store):
    uid = stored(store, None)
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert (message["authentication"], message["authentication_warning"]) == (None, "")


def test_a_method_not_reported_reads_none(alice_api, store):
    uid = stored(store, f"{settings.MAIL_HOST}; spf=pass smtp.mailfrom=a@paypal.com")
    message = alice_api.get(f"/inbox/{uid}", {"email": ADDRESS}).json()
    assert message["authentication"] == {"spf": "pass", "dkim": "none", "dmarc": "none", "arc": "none"}


def test_the_schema_describes_authentication(api):
    schema = api.get("/openapi.json").json()["components"]["schemas"]
    message = schema["MessageOutput"]["properties"]
    assert "authentication" in message and "authentication_warning" in message
    assert set(schema["AuthenticationOutput"]["properties"]) == {"spf", "dkim", "dmarc", "arc"}
