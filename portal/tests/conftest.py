"""Fixtures shared by the portal's page tests."""
import uuid

import pytest

from mailcore.store.factory import store_for
from testkit.factories import make_mailbox

WEBMAIL_PASSWORD = "mailbox-password-1"


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db),
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def webmail_owner(request, settings, plans, alice):
    """A mailbox whose owner uses the webmail, on the store named by the parameter (the embedded
    store, or the real Dovecot through the master user, as in production). On Dovecot a mailbox's
    mail outlives the test database, so each test gets a domain of its own."""
    if request.param == "imap":
        request.getfixturevalue("imap_settings")
        domain = f"d{uuid.uuid4().hex[:10]}.test"
    else:
        settings.MAIL_STORE = "embedded"
        domain = "example.test"
    mailbox = make_mailbox(alice.account, f"ann@{domain}", password=WEBMAIL_PASSWORD)
    store_for(mailbox).ensure_folders()
    return mailbox
