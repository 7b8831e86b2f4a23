"""A person logs in and sees the dashboard."""
import pytest

from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_person_logs_in_and_sees_the_dashboard(plans, page, live_server, log_in, screenshot):
    page.goto(f"{live_server.url}/accounts/login/")
    screenshot("login")
    user = UserFactory(email="journey@example.test", account__plan_code="premium")
    log_in(user.email, PASSWORD)
    assert page.get_by_role("heading", level=1).first.is_visible()
    assert "Premium" in page.content()
    screenshot("dashboard")
