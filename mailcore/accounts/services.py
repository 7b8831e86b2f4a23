"""Writes for accounts and users."""
from django.db import transaction

from mailcore.accounts.models import Account, Plan, User


def account_create(*, name: str, plan_code: str = "free") -> Account:
    return Account.objects.create(name=name, plan=Plan.objects.get(code=plan_code))


@transaction.atomic
def user_create_with_account(*, email: str, password: str | None, plan_code: str = "free") -> User:
    """A new person signing up gets an account of their own, on the Free plan by default."""
    account = account_create(name=email, plan_code=plan_code)
    return User.objects.create_user(email=email, password=password, account=account)


def account_attach_new_user(*, user: User, plan_code: str = "free") -> Account:
    """Give a user created elsewhere (allauth's sign-up form) an account of their own."""
    if user.account_id is None:
        user.account = account_create(name=user.email, plan_code=plan_code)
        user.save(update_fields=["account"])
    return user.account
