"""The local provider's hosted checkout, at the site's root and without a namespace:
billing.providers.local reverses "local-checkout"."""
from django.urls import path

from portal.checkout import views

urlpatterns = [
    path("billing/checkout/<str:token>/", views.local_checkout, name="local-checkout"),
    path("billing/thanks/", views.payment_thanks, name="checkout-thanks"),
    path("billing/thanks/retry/", views.payment_retry, name="checkout-retry"),
]
