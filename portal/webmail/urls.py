"""/webmail/: the mailbox owners' realm (sign-in at /webmail/)."""
from django.urls import path

from portal.webmail import views

app_name = "webmail"
urlpatterns = [
    path("", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("inbox/", views.folder, name="inbox"),
    path("folders/<path:name>/messages/<int:uid>/", views.message, name="message"),
    path("folders/<path:name>/", views.folder, name="folder"),
]
