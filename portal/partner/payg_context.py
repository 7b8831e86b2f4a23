"""The pay-as-you-go part of a mailbox page (its forms and context), apart from the views so the
mailbox page can include it without importing them."""
from django import forms

from billing.services import payg
from portal.partner.forms import PortalForm

PLANS = [("pro", "Pro"), ("premium", "Premium")]


class EmailLinkForm(PortalForm):
    email = forms.EmailField(label="Your customer's email address")


class UpgradeForm(PortalForm):
    new_plan_type = forms.ChoiceField(label="New plan", choices=PLANS)


def payg_context(partner_mailbox) -> dict:
    """What the mailbox page shows for a pay-as-you-go mailbox."""
    if partner_mailbox.funding_mode != "pay_as_you_go":
        return {}
    return {"payg": payg.payg_subscription(partner_mailbox=partner_mailbox),
            "payg_checkout_url": getattr(payg.open_checkout(partner_mailbox), "checkout_url", None),
            "email_link_form": EmailLinkForm(), "upgrade_form": UpgradeForm()}
