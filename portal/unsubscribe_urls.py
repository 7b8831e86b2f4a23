"""The unsubscribe page of campaign mail, at /u/<token> on the platform's public address (the one
List-Unsubscribe names: campaigns.unsubscribe.unsubscribe_url)."""
from django.urls import path

from portal.unsubscribe import unsubscribe_page

urlpatterns = [
    path("u/<str:token>", unsubscribe_page, name="campaign-unsubscribe"),
]
