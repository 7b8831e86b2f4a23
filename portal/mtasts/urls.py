"""The only URLconf of `mta-sts.<domain>` (portal.mtasts.middleware)."""
from django.urls import path

from portal.mtasts import views

urlpatterns = [
    path(".well-known/mta-sts.txt", views.policy, name="mta-sts-policy"),
]
