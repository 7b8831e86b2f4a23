"""The console's own forms: the partner and payout decision pages, the price form, and the operator's
authenticator set-up."""
from allauth.account.internal.flows.login import record_authentication
from allauth.core import context
from allauth.mfa.totp.forms import ActivateTOTPForm
from allauth.mfa.totp.internal.auth import SECRET_SESSION_KEY
from django import forms
from django.conf import settings

from billing.models import Payout, Price
from mailcore.partners.models import HostingPartner

NOTE_MAX = HostingPartner._meta.get_field("decision_note").max_length


class PartnerApproveForm(forms.Form):
    currency = forms.ChoiceField(label="Billing currency", choices=HostingPartner.Currency.choices,
                                 help_text="Every price and purchase of the partner is in it; it cannot change later.")
    trial_days = forms.IntegerField(label="Trial days", min_value=1, max_value=365)
    note = forms.CharField(label="Note to the applicant", required=False, max_length=NOTE_MAX,
                           widget=forms.Textarea(attrs={"rows": 3}), help_text="Optional; sent in the approval email.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trial_days"].initial = settings.PARTNER_TRIAL_DAYS


class PartnerDeclineForm(forms.Form):
    note = forms.CharField(label="Reason told to the applicant", required=False, max_length=NOTE_MAX,
                           widget=forms.Textarea(attrs={"rows": 3}), help_text="Optional; sent in the email.")


class PriceForm(forms.ModelForm):
    class Meta:
        model = Price
        fields = ["item", "currency", "amount_minor"]

    def clean_amount_minor(self) -> int:
        amount = self.cleaned_data["amount_minor"]
        if amount < 1:
            raise forms.ValidationError("A price is at least 1 minor unit (a cent or a kobo).")
        return amount


class PayoutDecisionForm(forms.Form):
    note = forms.CharField(label="Note to the partner", required=False,
                           max_length=Payout._meta.get_field("note").max_length,
                           widget=forms.Textarea(attrs={"rows": 3}),
                           help_text="Optional; shown on the partner's earnings page: the transfer's reference, or "
                                     "why it was rejected.")


class OperatorActivateTOTPForm(ActivateTOTPForm):
    """allauth's authenticator set-up, with the pending secret kept in the session until it is confirmed
    (allauth makes a new one on every GET: a reload would orphan the one already scanned). A right code
    also counts as this session's second-factor step, so the console opens without asking again."""

    def __init__(self, *args, **kwargs):
        pending = context.request.session.get(SECRET_SESSION_KEY)
        super().__init__(*args, **kwargs)
        if pending and not self.is_bound:
            self.secret = context.request.session[SECRET_SESSION_KEY] = pending

    def clean_code(self) -> str:
        code = super().clean_code()
        record_authentication(context.request, self.user, "mfa", type="totp")
        return code
