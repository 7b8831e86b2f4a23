"""The operator console: Django's admin on its own site (`portal.console.sites`), for staff only.

Who gets in: /admin/ serves only active staff users who signed in through allauth and passed its
TOTP step in this session. The admin's own login form is never shown: /admin/login/ is wrapped in
allauth's `secure_admin_login`, so a visitor who is not signed in goes to /accounts/login/ (allauth's
rate limits, email verification and, once an authenticator exists, its TOTP stage), and a signed-in
user who is not staff gets the normal 403. A staff user without a TOTP authenticator is sent to
/accounts/2fa/totp/activate/ with a message; one who has an authenticator but did not pass the TOTP
step in this session (signed in before activating it, or through another route) is sent to allauth's
/accounts/2fa/reauthenticate/ to enter a code. Operators are made with `manage.py createsuperuser`
(or by setting is_staff and granting permissions); the console cannot make staff.

What operators may do: rows are read-only except the price table; every write is an admin action
that calls the same service the API calls (`portal.console.admin`).
"""
