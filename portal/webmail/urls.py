"""/webmail/: reserved for the mailbox owners' realm (no pages yet)."""
app_name = "webmail"
urlpatterns: list = []
