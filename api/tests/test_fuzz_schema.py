"""The whole API fuzzed from its own OpenAPI schema (schemathesis, in process through WSGI): for
every operation, generated requests (valid and invalid) as the caller the operation is for: a
premium account's API key for the integrator API, a hosting partner's key for /v1/hosting and
/partners, and a session token for the session-only operations. Every response must be documented
(status, content type, body schema), never a 5xx; valid data must be accepted and invalid data
refused. The demo data (`seed_demo`) gives each caller real mailboxes, domains and clients.

The example count per operation is bounded (FUZZ_EXAMPLES, default 12) to keep CI within budget;
the derandomized seed makes a failure reproducible."""
import json
import os
import re
from io import StringIO

import pytest
import schemathesis
from hypothesis import strategies as st
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from mailcore.accounts.models import User
from mailcore.apikeys.sessions import session_token_issue

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))


def _schema():
    """The schema /openapi.json serves, made as it makes it (no request needed at collection)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    from django.core.wsgi import get_wsgi_application

    document = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    loaded = schemathesis.openapi.from_dict(document)
    loaded.app = get_wsgi_application()  # the app as the WSGI server runs it
    return loaded


# `format: rrule` (RFC 5545 recurrence rules, which the API parses): valid rules, or none.
schemathesis.openapi.format("rrule", st.sampled_from([
    "", "FREQ=DAILY", "FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10", "FREQ=MONTHLY;INTERVAL=2;BYMONTHDAY=15",
    "FREQ=YEARLY;UNTIL=20401231T000000Z", "FREQ=WEEKLY;INTERVAL=3;BYDAY=FR", "FREQ=DAILY;COUNT=5"]))
schema = _schema()


@pytest.fixture(autouse=True)
def connection_kept():
    """As in Django's test client, a request does not close the test's database connection when it
    ends (that would end the test's transaction): the app is called through WSGI."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def callers(db):
    """Headers per kind of operation, for the demo accounts."""
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    demo = json.loads(out.getvalue())["accounts"]
    premium = User.objects.get(email=demo["premium"]["email"])
    _, token = session_token_issue(user=premium)
    return {"premium": {"X-API-Key": demo["premium"]["api_key"]},
            "partner": {"X-API-Key": demo["partner"]["api_key"]},
            "session": {"Authorization": f"Bearer {token}"}}


def caller_for(case) -> str:
    operation = case.operation.definition.raw
    schemes = {name for requirement in operation.get("security", [{}]) for name in requirement}
    if "ApiKey" not in schemes and schemes & {"SessionToken", "PortalCookie"}:
        return "session"
    return "partner" if case.path.startswith(("/v1/hosting", "/partners")) else "premium"


# Refusals of schema-valid data that depend on the state or the clock, which a schema cannot state:
# another account's or an unknown object, a name already taken, a time that has passed.
STATE_REFUSALS = re.compile("|".join([
    r"must be in the future",  # a time that has passed by the time it arrives
    r"of this account",  # "not a mailbox of this account": an address of nobody's, or another account's
    r"\bat (least|most) ",  # per-currency minimums (payouts), the partner's prices, the balance, 10 endpoints
    r"exists already|already",  # a name or address taken by an earlier request
    r"hosting partner account",  # partner scopes asked for by an account that is no partner
    r"could not log in",  # a connected mailbox's server, which the fuzzer's host names never are
    r"mail server reachable on the public internet|no (IMAP|SMTP submission) server answered|stopped answering"
    r"|refused this username",  # likewise, and the fuzzer's addresses are no public servers
    r"cannot be connected here",  # an address hosted here (the demo's domains)
    r"no code is waiting|wrong code",  # a connected mailbox's code, which only its address's mail holds
    r"without its provider's submission server",  # a connected mailbox that cannot send
    r"set by an operator",  # the demo premium plan is an operator's grant, not a subscription to change
    r"accounts only",
    r"your billing currency",  # a partner's prices and payouts are in its own currency, not the request's
    r"may not be before",  # an end before its start: a rule between two fields
    r"required to pay",
    r"contact address is needed",  # a client domain's monthly report switched on before it has an address
    r"no template with this id",  # a template id the account does not have  # a return_url needed only when the account's change needs a checkout  # bank transfer is for NGN accounts: the currency is the account's, not the request's
]))
ACCEPTED = {401, 402, 403, 404, 409, 429}  # refusals a valid request can still get


def _messages(errors) -> list[str]:
    if isinstance(errors, dict):
        return [message for value in errors.values() for message in _messages(value)]
    if isinstance(errors, list):
        return [message for value in errors for message in _messages(value)]
    return [str(errors)]


def positive_data_accepted(ctx, response, case):
    """Schema-valid data is accepted, or refused only for a reason of state (STATE_REFUSALS)."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return None
    status = response.status_code
    documented = case.operation.definition.raw.get("responses", {})
    if status < 400 or status in ACCEPTED or (status != 422 and str(status) in documented):
        return None  # an error the operation documents by its own code is one of its outcomes
    body = response.json() if status == 422 else {}
    refusals = [message for message in _messages(body.get("errors", {})) if not STATE_REFUSALS.search(message)]
    if status == 400 and STATE_REFUSALS.search(response.json().get("detail", "")):
        return None  # the spec's 400s for a state (a plan already held, a payment method of the other currency)
    if status != 422 or refusals or not body.get("errors"):
        raise AssertionError(f"schema-valid request refused with {status}: {response.text[:500]}")
    return None


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_operation_keeps_its_schema(case, callers):
    excluded = [positive_data_acceptance]
    if case.path == "/mcp":  # JSON-RPC: a request it cannot serve is an error object in a 200, by the protocol
        excluded.append(negative_data_rejection)
    case.call_and_validate(headers=callers[caller_for(case)], excluded_checks=excluded,
                           additional_checks=[positive_data_accepted])
