"""allauth hooks: every person who signs up gets an account of their own; mails name the product."""
from dataclasses import dataclass

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core import context
from django.conf import settings

from mailcore.accounts.services import account_attach_new_user


class AccountAdapter(DefaultAccountAdapter):
    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            account_attach_new_user(user=user)
        return user

    def send_mail(self, template_prefix: str, email: str, context_data: dict) -> None:
        """allauth's mails greet from the current site; without django.contrib.sites that is the
        request's host ("Hello from 127.0.0.1:8000!"), so they get the product's name instead."""
        request = context.request
        host = request.get_host() if request is not None else ""
        super().send_mail(template_prefix, email, {"current_site": NamedSite(settings.SITE_NAME, host),
                                                   **context_data})


@dataclass(frozen=True)
class NamedSite:
    """What allauth's mail templates read of a site."""

    name: str
    domain: str
