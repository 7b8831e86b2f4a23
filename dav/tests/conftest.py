"""CardDAV/CalDAV tests run against a live server (a thread of the test process on the test
database), so they are transactional and start from the plans. ann@example.test is a Pro
mailbox (contacts and calendar), dan@example.test a mailbox of another account, fay@free.test a
Free one."""

import httpx
import pytest

from testkit.factories import AccountFactory, make_mailbox

PASSWORD = "mailbox-password-1"
ANN = "ann@example.test"

@pytest.fixture(autouse=True)
def _plans(plans):
    """Transactional tests start from an empty database: the plans first."""

@pytest.fixture
def ann(db):
    return make_mailbox(AccountFactory(plan_code="pro"), ANN, password=PASSWORD, display_name="Ann Example")

@pytest.fixture
def dan(db):
    return make_mailbox(AccountFactory(plan_code="pro"), "dan@other.test", password="dans-password-1")

@pytest.fixture
def fay(db):
    return make_mailbox(AccountFactory(plan_code="free"), "fay@free.test", password="fays-password-1")

@pytest.fixture
def dav_url(live_server) -> str:
    return f"{live_server.url}/dav/"

@pytest.fixture
def http(live_server, ann):
    """An HTTP client signed in as ann."""
    with httpx.Client(base_url=live_server.url, auth=(ANN, PASSWORD), timeout=20) as client:
        yield client
