from mailcore.apikeys.services import api_key_create


def new_key(user, **options) -> str:
    """A raw API key for the user's account."""
    options.setdefault("name", "test key")
    _, raw = api_key_create(account=user.account, created_by=user, **options)
    return raw
