"""Start-up checks for production: a server must not come up with a login anyone can look up."""
from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.core import checks
from django.db import DatabaseError

DEMO_LOGINS_ID = "mailwell.E001"
DEMO_TAG = "mailwell_demo_logins"


@checks.register(DEMO_TAG, deploy=True)
def demo_logins_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """An Error for each login seed_demo made that still has its published password (one hash check
    each): production serves nothing until it is changed or removed."""
    if not settings.PRODUCTION:
        return []
    from mailcore.accounts.models import User
    from mailcore.mailboxes.models import Mailbox
    from mailcore.mailboxes.passwords import mailbox_password_verify
    from mailcore.management.commands.seed_demo import DEMO_MAILBOX_LOGINS, DEMO_USER_LOGINS

    found: list[tuple[str, str]] = []
    try:
        for user in User.objects.filter(email__in=DEMO_USER_LOGINS, is_active=True):
            if check_password(DEMO_USER_LOGINS[user.email], user.password):
                kind = "a superuser's login" if user.is_superuser else "an account login"
                found.append((f"{user.email} ({kind})",
                              f"run `manage.py changepassword {user.email}` or delete the user"))
        for mailbox in Mailbox.objects.filter(address__in=DEMO_MAILBOX_LOGINS, is_active=True):
            if mailbox_password_verify(DEMO_MAILBOX_LOGINS[mailbox.address], mailbox.password_hash):
                found.append((f"{mailbox.address} (a mailbox)", "give it a new password or delete the mailbox"))
    except DatabaseError:  # tables not made yet: nothing was seeded
        return []
    return [checks.Error(f"{login} still has the password seed_demo published.",
                         hint=f"Anyone can sign in with it: {fix}. Demo data never belongs in production.",
                         id=DEMO_LOGINS_ID) for login, fix in found]


def production_start_refused() -> str | None:
    """What stops a production server from starting (the errors above), or None."""
    errors = [message for message in checks.run_checks(tags=[DEMO_TAG], include_deployment_checks=True)
              if message.is_serious()]
    if not errors:
        return None
    return "Mailwell will not start in production:\n" + "\n".join(
        f"  {message.msg} {message.hint}" for message in errors)
