"""Threading headers through the one send path: a SendRequest's in_reply_to and references are
checked like every other header, kept in the payload only when given, and written by build_message;
the REST API does not take them (its input is unchanged). Also the pure helpers compose builds on:
Re:/Fwd: subjects and address fields as people type them."""
import email
from email import policy

import pytest

from mailcore.errors import InvalidFields
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from webmail.drafts import format_address, split_addresses
from mailcore.sending.inputs import SendRequest
from webmail.replies import forward_subject, reply_subject
from mailcore.sending.services import mail_send
from testkit.clients import new_key

pytestmark = pytest.mark.django_db


def send(alice, **fields):
    return mail_send(account=alice.account, user=alice, request=SendRequest(
        from_email="ann@example.test", to=["bob@remote.test"], subject="Re: Lunch", body_text="Yes", **fields))


def test_threading_headers_are_kept_and_written(alice, ann, relay):
    message = send(alice, in_reply_to=" <orig-1@remote.test> ",
                   references="<root-1@remote.test>\n <orig-1@remote.test>")

    assert (message.payload["in_reply_to"], message.payload["references"]) == (
        "<orig-1@remote.test>", "<root-1@remote.test> <orig-1@remote.test>")
    outbound_dispatch_due()
    delivered = email.message_from_bytes(relay.messages[0].content, policy=policy.default)
    assert delivered["In-Reply-To"] == "<orig-1@remote.test>"
    assert delivered["References"] == "<root-1@remote.test> <orig-1@remote.test>"


def test_a_send_without_threading_keeps_the_payload_it_always_had(alice, ann):
    message = send(alice)

    assert "in_reply_to" not in message.payload and "references" not in message.payload


@pytest.mark.parametrize("fields, field, problem", [
    ({"in_reply_to": "<a@b.test>\r\nBcc: eve@evil.test"}, "in_reply_to", "must not contain line breaks"),
    ({"in_reply_to": "not-an-id"}, "in_reply_to", "is not a message id"),
    ({"in_reply_to": "<a@b.test> <c@d.test>"}, "in_reply_to", "must be one message id"),
    ({"references": "<a@b.test> <no-at-sign>"}, "references", "'<no-at-sign>' is not a message id"),
    ({"references": "<a@b.test>\x00"}, "references", "must not contain control characters"),
    ({"references": " ".join(f"<id{n}@example.test>" for n in range(300))}, "references", "at most 4000"),
])
def test_bad_threading_values_are_refused_and_nothing_is_queued(alice, ann, fields, field, problem):
    with pytest.raises(InvalidFields) as refused:
        send(alice, **fields)

    assert problem in refused.value.message_dict[field][0]
    assert OutboundMessage.objects.count() == 0


def test_the_rest_api_refuses_threading_fields_it_does_not_take(api, alice, ann):
    response = api.post("/mail/send", {"from_email": "ann@example.test", "to": ["bob@remote.test"], "body_text": "x",
                                       "in_reply_to": "<orig-1@remote.test>"},
                        format="json", HTTP_X_API_KEY=new_key(alice, scopes=["send"]))

    assert (response.status_code, response.json()["errors"]) == (422, {"in_reply_to": ["Unknown field."]})
    assert not OutboundMessage.objects.exists()  # a body names only the fields of its schema


@pytest.mark.parametrize("subject, reply, forward", [
    ("Lunch", "Re: Lunch", "Fwd: Lunch"),
    ("Re: Lunch", "Re: Lunch", "Fwd: Re: Lunch"),
    ("RE:Lunch", "RE:Lunch", "Fwd: RE:Lunch"),
    ("AW: Mittag", "AW: Mittag", "Fwd: AW: Mittag"),
    ("Fwd: Report", "Re: Fwd: Report", "Fwd: Report"),
    ("FW: Report", "Re: FW: Report", "FW: Report"),
    ("", "Re:", "Fwd:"),
])
def test_subjects_get_re_and_fwd_once(subject, reply, forward):
    assert (reply_subject(subject), forward_subject(subject)) == (reply, forward)


@pytest.mark.parametrize("typed, pairs", [
    ("bob@x.test", [("", "bob@x.test")]),
    ('Bob <bob@x.test>, "Doe, Jo" <jo@x.test>; amy@y.test', [("Bob", "bob@x.test"), ("Doe, Jo", "jo@x.test"),
                                                             ("", "amy@y.test")]),
    (" , bob@, ,", [("", "bob@")]),
    ("<a@b.test>", [("", "a@b.test")]),
    ("a@b.test\nc@d.test", [("", "a@b.test"), ("", "c@d.test")]),
])
def test_address_fields_split_as_people_type_them(typed, pairs):
    assert split_addresses(typed) == pairs


def test_display_names_are_quoted_when_they_need_it():
    assert [format_address("Bob", "b@x.test"), format_address("Doe, Jo", "j@x.test"),
            format_address('Al "Big" Co.', "a@x.test"), format_address("", "c@x.test")] == [
        "Bob <b@x.test>", '"Doe, Jo" <j@x.test>', '"Al \\"Big\\" Co." <a@x.test>', "c@x.test"]
