"""The API reference at /docs renders in Chromium under the site's Content-Security-Policy: Swagger UI
loads, lists the operations of /openapi.json, and no console error (a blocked inline script among them)
appears. The start-up script is a file of its own (drf-spectacular's split view), never inline."""
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}


def test_the_api_docs_render_their_operations_without_a_console_error(plans, page, live_server, screenshot):
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))

    response = page.goto(f"{live_server.url}/docs")
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Mail Service API")
    operation = page.get_by_role("button", name="GET /api-keys List API keys")
    expect(operation).to_be_visible()
    operation.click()
    expect(page.locator(".opblock.is-open").get_by_role("button", name="Try it out")).to_be_visible()
    # Swagger UI renders only what is near the viewport: the schema's last operation appears once scrolled to.
    schema = page.request.get(f"{live_server.url}/openapi.json").json()
    path, operations = list(schema["paths"].items())[-1]
    method, operation = list(operations.items())[-1]
    page.keyboard.press("End")
    expect(page.get_by_role("button", name=f"{method.upper()} {path} {operation['summary']}")).to_be_visible()

    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        screenshot(f"api-docs-{width}")
    assert errors == []
