"""The mail list: folders, search, conversations, bulk actions, folders and labels (portal.webmail.mail_list)."""
from django.urls import path

from portal.webmail import mail_list

urlpatterns = [
    path("inbox/", mail_list.folder, name="inbox"),
    path("folders/", mail_list.folders, name="folders"),
    path("labels/", mail_list.labels, name="labels"),
    path("bulk/<path:name>/", mail_list.bulk, name="bulk"),
    path("conversations/<path:name>/<int:uid>/", mail_list.conversation, name="conversation"),
    path("folders/<path:name>/", mail_list.folder, name="folder"),
]
