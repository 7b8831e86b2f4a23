"""A production server refuses to start while a login seed_demo made (in an earlier, non-production
run on the same database) still has its published password: gunicorn's workers fail to boot with a
message naming the account and the fix, and `manage.py check --deploy` reports it. Changing those
passwords lets it start. Real processes on a database of their own in DATA_DIR."""
from testkit.django_process import PRODUCTION, django_probe, django_process

CHANGE_EVERY_DEMO_PASSWORD = """
from mailcore.accounts.models import User
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.services import mailbox_set_password
for user in User.objects.all():
    user.set_password("a long private password 9f3k")
    user.save()
for mailbox in Mailbox.objects.all():
    mailbox_set_password(mailbox=mailbox, password="a long private password 9f3k")
"""


def test_a_production_server_will_not_start_with_the_demo_operators_published_password(tmp_path):
    development = {"DATA_DIR": str(tmp_path), "DJANGO_ENV": "development"}
    production = {**PRODUCTION, "DATA_DIR": str(tmp_path)}
    for step in (["manage.py", "migrate", "--noinput"], ["manage.py", "seed_demo"]):
        done = django_process(step, development, timeout=300)
        assert done.returncode == 0, done.stderr

    web = django_process(["-m", "gunicorn", "config.wsgi:application", "--workers", "1",
                          "--bind", "127.0.0.1:0"], production, timeout=120)
    assert web.returncode != 0
    assert "Mailwell will not start in production" in web.stderr
    assert ("operator@mailwell.test (a superuser's login) still has the password seed_demo published. Anyone can "
            "sign in with it: run `manage.py changepassword operator@mailwell.test` or delete the user.") in web.stderr
    assert "hello@demo.mailwell.test (a mailbox)" in web.stderr
    assert "operator-pass-2026" not in web.stderr

    check = django_process(["manage.py", "check", "--deploy"], production)
    assert check.returncode != 0 and "(mailwell.E001) operator@mailwell.test" in check.stderr

    assert django_probe(CHANGE_EVERY_DEMO_PASSWORD, production).returncode == 0
    check = django_process(["manage.py", "check", "--deploy"], production)
    assert "mailwell.E001" not in check.stdout + check.stderr, check.stderr
    assert check.returncode == 0, check.stderr
