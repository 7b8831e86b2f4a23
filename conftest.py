"""Fixtures shared by every test: three standing actors and API clients for them.

alice owns a premium account, bob is her teammate in the same account, charlie is a stranger
with an account of his own who must get 404 for everything of alice's.
"""
import pytest
from rest_framework.test import APIClient

from mailcore.tests.factories import UserFactory


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": str(tmp_path)}}
    settings.API_KEY_USAGE_FLUSH_SECONDS = 0


@pytest.fixture
def alice(db):
    return UserFactory(email="alice@example.test", account__plan_code="premium")


@pytest.fixture
def bob(alice):
    return UserFactory(email="bob@example.test", account=alice.account)


@pytest.fixture
def charlie(db):
    return UserFactory(email="charlie@example.test", account__plan_code="free")


@pytest.fixture
def api():
    return APIClient()


def login_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def alice_api(alice):
    return login_client(alice)


@pytest.fixture
def charlie_api(charlie):
    return login_client(charlie)
