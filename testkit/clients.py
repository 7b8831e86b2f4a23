from mailcore.apikeys.services import api_key_create


def new_key(user, **options) -> str:
    """A raw API key for the user's account."""
    options.setdefault("name", "test key")
    _, raw = api_key_create(account=user.account, created_by=user, **options)
    return raw


def login_client(user):
    """An API client signed in with the portal's cookie session."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(user)
    return client


def key_client(user, scopes):
    """An API client that sends a new key of the user's account with these scopes."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(user, scopes=scopes))
    return client
