"""A password typed at sign-in is enough to set up a first authenticator, and for nothing else:
removing the authenticator or regenerating recovery codes asks for the password (or a code) again,
however recent the sign-in."""
import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.recovery_codes.internal.auth import RecoveryCodes
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

from portal.tests.test_operator_console import ACTIVATE_TOTP, HTML, sign_in, staff, staff_secret  # noqa: F401
from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db
DEACTIVATE_TOTP = "/accounts/2fa/totp/deactivate/"
REGENERATE_CODES = "/accounts/2fa/recovery-codes/generate/"


@pytest.fixture
def user_with_totp(db):
    user = UserFactory(email="una@example.test")
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    RecoveryCodes.activate(user)
    return user, secret


@pytest.mark.parametrize("who", ["user", "operator"])
def test_removing_an_authenticator_right_after_sign_in_asks_to_re_authenticate(client, user_with_totp, staff,
                                                                             staff_secret, who):
    user, secret = user_with_totp if who == "user" else (staff, staff_secret)
    sign_in(client, user, secret, next_url="/accounts/2fa/")

    response = client.post(DEACTIVATE_TOTP, **HTML)

    assert response.status_code == 302
    assert response["Location"].startswith(("/accounts/reauthenticate/", "/accounts/2fa/reauthenticate/"))
    assert Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists()


def test_regenerating_recovery_codes_right_after_sign_in_asks_to_re_authenticate(client, user_with_totp):
    user, secret = user_with_totp
    codes = Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES).data
    sign_in(client, user, secret, next_url="/accounts/2fa/")

    response = client.post(REGENERATE_CODES, **HTML)

    assert response.status_code == 302
    assert response["Location"].startswith(("/accounts/reauthenticate/", "/accounts/2fa/reauthenticate/"))
    assert Authenticator.objects.get(user=user, type=Authenticator.Type.RECOVERY_CODES).data == codes


def test_after_re_authenticating_the_authenticator_can_be_removed(client, user_with_totp):
    user, secret = user_with_totp
    sign_in(client, user, secret, next_url="/accounts/2fa/")
    response = client.post(f"/accounts/reauthenticate/?next={DEACTIVATE_TOTP}", {"password": PASSWORD}, **HTML)
    assert response.status_code == 302

    assert client.post(DEACTIVATE_TOTP, **HTML).status_code == 302
    assert not Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists()


def test_a_first_authenticator_is_set_up_right_after_sign_in_without_typing_the_password_again(client, staff):
    sign_in(client, staff)
    response = client.get(ACTIVATE_TOTP, **HTML)
    assert response.status_code == 200
