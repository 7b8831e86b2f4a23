"""Request bodies are typed strictly: JSON's own types are the contract.

DRF's fields coerce (`"yes"` becomes True, `"10"` becomes 10, `123` becomes `"123"`), which hides
integrators' bugs until a value arrives that cannot be coerced. Every body serializer derives from
`StrictInput`, which refuses a value of the wrong JSON type with a 422 naming the field before the
field's own rules run. Query strings stay with the plain fields: there every value is text.
"""
import threading
from collections.abc import Mapping
from functools import cached_property

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
    """A request body: each present value must already have its field's JSON type."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            errors = {}
            for name, field in self.fields.items():
                if field.read_only or name not in data:
                    continue
                if problem := type_problem(field, data[name]):
                    errors[name] = problem
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class ClosedInput(StrictInput):
    """A body that names only the fields of its schema: any other key is a 422 on that key."""

    refused: dict[str, str] = {}  # field name -> why it is refused here

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = {name: [self.refused.get(name, "Unknown field.")] for name in data if name not in self.fields}
            if unknown:
                raise serializers.ValidationError(unknown)
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
