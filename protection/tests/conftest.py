"""Fixtures shared by protection's tests."""
import pytest

from mailcore.store.factory import store_for
from testkit.dovecot import use_store
from testkit.factories import make_mailbox

OWNER_PASSWORD = "mailbox-password-1"


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db),
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def owner_on_each_store(request, settings, plans, alice):
    """A webmail owner's mailbox on the embedded store, then on the real Dovecot (through the
    master user, as in production); each on a domain of its own, so its Bayes scope is new too."""
    domain = use_store(request, settings)
    if request.param == "embedded":
        domain = f"e{request.node.name.__hash__() & 0xffffffff:x}{id(request) & 0xffff:x}.test"
    mailbox = make_mailbox(alice.account, f"ann@{domain}", password=OWNER_PASSWORD)
    store_for(mailbox).ensure_folders()
    return mailbox
