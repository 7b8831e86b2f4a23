"""/webmail/ (and / on a partner's verified webmail hostname): the mailbox owners' realm.
One module per part: sign-in, the mail list, reading, compose, the owner's settings, contacts, calendar."""
from django.urls import include, path

from portal.webmail import views

app_name = "webmail"
urlpatterns = [
    path("", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("", include("portal.webmail.reading_urls")),
    path("compose/", include("portal.webmail.compose_urls")),
    path("settings/", include("portal.webmail.settings_urls")),
    path("contacts/", include("portal.webmail.contacts_urls")),
    path("calendar/", include("portal.webmail.calendar_urls")),
    path("quarantine/", include("portal.webmail.quarantine_urls")),
    path("", include("portal.webmail.mail_list_urls")),  # last: folders/<path:name>/ takes any deeper path
]
