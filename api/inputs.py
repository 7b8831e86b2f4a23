"""Request bodies are typed strictly: JSON's own types are the contract.

DRF's fields coerce (`"yes"` becomes True, `"10"` becomes 10, `123` becomes `"123"`), which hides
integrators' bugs until a value arrives that cannot be coerced. Every body serializer derives from
`StrictInput`, which refuses a value of the wrong JSON type with a 422 naming the field before the
field's own rules run. Query strings stay with the plain fields: there every value is text.
"""
import threading
from collections.abc import Mapping
from functools import cached_property

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils.serializer_helpers import BindingDict

_NUMBER_FIELDS = (serializers.FloatField, serializers.DecimalField)
_TEXT_FIELDS = (serializers.CharField, serializers.DateTimeField, serializers.DateField, serializers.TimeField,
                serializers.UUIDField, serializers.DurationField)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _expected(field: serializers.Field) -> tuple[str, object] | None:
    """(the JSON type's name, a test for it), or None when the field takes any JSON value."""
    if isinstance(field, serializers.BooleanField):
        return "a boolean", lambda value: isinstance(value, bool)
    if isinstance(field, serializers.IntegerField):
        return "an integer", _is_int
    if isinstance(field, _NUMBER_FIELDS):
        return "a number", lambda value: _is_int(value) or isinstance(value, float)
    if isinstance(field, serializers.MultipleChoiceField):
        return "a list", lambda value: isinstance(value, list)
    if isinstance(field, serializers.ChoiceField):
        if all(isinstance(choice, str) for choice in field.choices):
            return "a string", lambda value: isinstance(value, str)
        return None
    if isinstance(field, _TEXT_FIELDS):
        return "a string", lambda value: isinstance(value, str)
    if isinstance(field, (serializers.ListField, serializers.ListSerializer)):
        return "a list", lambda value: isinstance(value, list)
    if isinstance(field, (serializers.DictField, serializers.Serializer)):
        return "an object", lambda value: isinstance(value, Mapping)
    return None


def type_problem(field: serializers.Field, value) -> list[str] | dict | None:
    """What is wrong with the JSON type of `value` for `field` (None: nothing; null is the field's business)."""
    if value is None:
        return None
    expected = _expected(field)
    if expected and not expected[1](value):
        return [f"must be {expected[0]}, not {_json_type(value)}"]
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        items = {index: problem for index, item in enumerate(value) if (problem := type_problem(field.child, item))}
        return items or None
    return None


def _json_type(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


class StrictInput(serializers.Serializer):
    """A request body: only the fields of its schema (any other key is a 422 on that key: a typo such
    as "schedule_at" must not pass unnoticed), each present value already of its field's JSON type."""

    refused: dict[str, str] = {}  # field name -> why it is refused here

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            errors = {name: [self.refused.get(name, "Unknown field.")] for name in data if name not in self.fields}
            for name, field in self.fields.items():
                if field.read_only or name not in data:
                    continue
                if problem := type_problem(field, data[name]):
                    errors[name] = problem
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class ReusedFields:
    """For a body validated on every request of a hot path (POST /mail/send): DRF deep-copies a
    serializer's declared fields for each instance, about a twentieth of a send's CPU. These
    fields keep no state from one validation to the next, so each thread builds them once and
    later instances only adopt them (their parent, hence root and context, is the new instance)."""

    _built = threading.local()

    @cached_property
    def fields(self):
        built = self._built.__dict__.get(type(self))
        if built is None:
            built = BindingDict(self)
            for name, field in self.get_fields().items():
                built[name] = field
            self._built.__dict__[type(self)] = built
        for field in built.values():
            field.parent = self
        return built


# What the schema states for text checked by code rather than by a pattern: the ASCII forms, which
# generated requests use; the API also takes a name's Unicode (IDN) form and a trailing dot.
_LABEL = "(?![Xx][Nn]--)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"  # no punycode: it must decode
HOSTNAME_PATTERN = rf"^(?=.{{1,253}}$)(?:{_LABEL}\.)+(?![0-9]+$){_LABEL}$"
# A URL's host in at most five labels of at most 40 characters (within DNS's 253), and at most 1,500
# characters after it: the bounds are in the pattern (no maxLength beside it, which would have the
# fuzzer build strings of exactly that length).
_SHORT_LABEL = "(?![Xx][Nn]--)[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}[A-Za-z0-9])?"
_URL_REST = (rf"://(?:localhost|(?:{_SHORT_LABEL}\.){{1,4}}[A-Za-z]{{2,40}})(?::[0-9]{{1,5}})?"
             r"(?:[/?#][^\s\x00-\x1f\x7f\x85]{0,1500})?$")  # no space or control character, as Python's \s
HTTP_URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?{_URL_REST}"
HTTPS_URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]{_URL_REST}"
# Text that becomes (part of) a header: no line breaks or control characters but tab; one_line
# text (names, campaign subjects) not even a tab. The validators carry the patterns into the schema.
header_text = RegexValidator(r"^[^\x00-\x08\x0a-\x1f\x7f]*$", "must not contain line breaks or control characters")
one_line = RegexValidator(r"^[^\x00-\x1f\x7f]*$", "must be one line without control characters")
# An IPv4 or IPv6 address, or a network in CIDR notation (Python's ipaddress reads them).
IP_OR_NETWORK = {"anyOf": [{"type": "string", "format": "ipv4"}, {"type": "string", "format": "ipv6"},
                           {"type": "string", "pattern": r"^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                                                         r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])/(?:3[0-2]|[12]?[0-9])$"}],
                 "description": "An IPv4 or IPv6 address, or a CIDR such as 10.0.0.0/8."}


@extend_schema_field({"type": "string", "pattern": HTTP_URL_PATTERN})
class ReturnUrlField(serializers.URLField):
    """An http(s) address the provider's page sends the buyer back to (never another scheme)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)  # URLValidator's own limit (2,048) stands; the schema's pattern is shorter
        self.validators.append(self._http_only)

    @staticmethod
    def _http_only(value: str) -> None:
        if not value.lower().startswith(("http://", "https://")):
            raise serializers.ValidationError("an http or https URL")


@extend_schema_field({"type": "string", "pattern": HTTPS_URL_PATTERN})
class HttpsUrlField(serializers.URLField):
    """An https URL (a webhook endpoint's; mailcore.webhooks.safety checks where it leads)."""


@extend_schema_field({"type": "string", "format": "email", "maxLength": 320})
class AddressField(serializers.CharField):
    """A recipient's address; mail_send checks it (and takes an IDN domain too)."""

    def __init__(self, **kwargs):
        super().__init__(max_length=320, **kwargs)


@extend_schema_field({"anyOf": [{"type": "string", "format": "email", "maxLength": 320},
                               {"type": "string", "maxLength": 0}]})
class OptionalAddressField(AddressField):
    """An address, or "" for none."""

    def __init__(self, **kwargs):
        super().__init__(allow_blank=True, **kwargs)


@extend_schema_field(IP_OR_NETWORK)
class IpField(serializers.CharField):
    """An address or network, checked by mailcore.ipnets where it is used."""


@extend_schema_field({"type": "string", "maxLength": 253, "pattern": HOSTNAME_PATTERN,
                      "description": "A host name with at least one dot (its Unicode form is accepted too)."})
class HostnameField(serializers.CharField):
    """A host name, checked by mailcore.domains.names where it is used."""

    def __init__(self, **kwargs):
        super().__init__(max_length=253, **kwargs)
