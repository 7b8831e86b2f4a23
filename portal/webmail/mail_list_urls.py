"""The mail list: folders, search, conversations, bulk actions (portal.webmail.mail_list)."""
from django.urls import path

from portal.webmail import views

urlpatterns = [
    path("inbox/", views.folder, name="inbox"),
    path("folders/<path:name>/", views.folder, name="folder"),
]
