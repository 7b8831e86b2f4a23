"""Fixtures shared by the portal's page tests."""

import pytest

from mailcore.store.factory import store_for
from testkit.dovecot import use_store
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
    mailbox = make_mailbox(alice.account, f"ann@{use_store(request, settings)}", password=WEBMAIL_PASSWORD)
    store_for(mailbox).ensure_folders()
    return mailbox
