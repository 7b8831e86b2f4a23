"""Every error is {"detail": "..."} with the right status."""
import pytest
from rest_framework.test import APIClient

from testkit.clients import new_key

pytestmark = pytest.mark.django_db


def test_an_unknown_route_is_a_json_404(api):
    for path in ("/no-such-thing", "/v1/hosting/nothing", "/mail/nope"):
        response = api.get(path)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json() == {"detail": "Not found."}


def test_an_unknown_route_is_json_even_with_debug_on(api, settings):
    settings.DEBUG = True
    response = api.get("/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_a_browser_gets_an_html_404_outside_the_api(client):
    response = client.get("/no-such-page", HTTP_ACCEPT="text/html")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_wrong_method_is_405(alice_api):
    response = alice_api.put("/api-keys", {}, format="json")
    assert response.status_code == 405
    assert response.json() == {"detail": 'Method "PUT" not allowed.'}


def test_a_body_that_is_not_json_is_415(alice_api):
    response = alice_api.post("/api-keys", "name=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "Unsupported media type" in response.json()["detail"]


def test_malformed_json_is_400(alice_api):
    response = alice_api.post("/api-keys", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_validation_errors_are_422_with_a_summary_and_field_errors(alice_api):
    response = alice_api.post("/api-keys", {"name": "", "scopes": ["bogus"]}, format="json")
    assert response.status_code == 422
    body = response.json()
    assert body["detail"] == 'Validation failed: name: This field may not be blank.; scopes.0: "bogus" is not a valid choice.'
    assert body["errors"] == {"name": ["This field may not be blank."], "scopes": {"0": ['"bogus" is not a valid choice.']}}


def test_a_login_with_a_missing_field_is_422(api):
    response = api.post("/auth/login", {"email": "a@example.test"}, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {"password": ["This field is required."]}


@pytest.mark.urls("api.tests.probe_urls")
def test_a_server_error_is_500_without_internals(alice):
    client = APIClient(raise_request_exception=False)
    response = client.get("/probe/broken", HTTP_X_API_KEY=new_key(alice))
    assert response.status_code == 500
    assert response.json() == {"detail": "Internal server error."}
    assert "hunter2" not in response.content.decode()


def test_timestamps_are_iso_8601_utc(alice_api):
    created = alice_api.post("/api-keys", {"name": "k", "expires_at": "2099-01-01T12:00:00+02:00"}, format="json").json()
    assert created["expires_at"] == "2099-01-01T10:00:00Z"
    assert created["created_at"].endswith("Z")
