"""allauth hooks: every person who signs up gets an account of their own."""
from allauth.account.adapter import DefaultAccountAdapter

from mailcore.accounts.services import account_attach_new_user


class AccountAdapter(DefaultAccountAdapter):
    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            account_attach_new_user(user=user)
        return user
