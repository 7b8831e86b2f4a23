import pytest

pytestmark = pytest.mark.django_db


def test_the_schema_lists_every_endpoint_built_so_far(api):
    response = api.get("/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/auth/login", "/auth/logout", "/api-keys", "/api-keys/{key_id}", "/api-keys/{key_id}/usage",
                 "/subscriptions/me", "/inbox", "/inbox/{uid}", "/inbox/folders", "/inbox/{uid}/attachments/{index}",
                 "/labels", "/labels/{label_id}", "/mailboxes", "/mailboxes/connected", "/mail/mailbox-usage",
                 "/mail/send", "/mail/scheduled", "/mail/scheduled/{scheduled_id}", "/mail/templates",
                 "/mail/templates/{template_id}"):
        assert path in schema["paths"], path
    assert set(schema["paths"]["/api-keys/{key_id}"]) >= {"get", "patch", "delete"}
    assert schema["components"]["securitySchemes"]["ApiKey"]["name"] == "X-API-Key"
    assert set(schema["components"]["securitySchemes"]) == {"ApiKey", "SessionToken", "PortalCookie"}


def test_the_docs_page_is_served_without_external_assets(client):
    response = client.get("/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger" in html.lower()
    assert "cdn." not in html and "unpkg" not in html


def test_the_schema_generates_without_warnings_and_validates():
    from io import StringIO

    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", stdout=StringIO())


def test_no_code_comment_reaches_a_schema_description(api):
    """Our base classes' docstrings explain the code; a body without a docstring of its own publishes none."""
    schema = api.get("/openapi.json").json()
    send = schema["components"]["schemas"]["SendInputRequest"]
    assert "description" not in send
    components = schema["components"]["schemas"]
    for name in ("MessageOutput", "MessageSummaryOutput", "LoginInputRequest", "DomainCreateInputRequest"):
        assert "description" not in components[name], name
    leaked = ("deep-copies", "CPU", "DRF", "Python keyword", "each thread", "A request body: only the fields")
    texts = []

    def collect(node):
        if isinstance(node, dict):
            texts.extend(value for key, value in node.items() if key in ("description", "summary")
                         and isinstance(value, str))
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(schema)
    assert [text for text in texts if any(word in text for word in leaked)] == []
