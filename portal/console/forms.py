"""The console's own forms: the partner and payout decision pages, and the price form."""
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
