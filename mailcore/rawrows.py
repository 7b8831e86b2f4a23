"""Model instances from a hand-written SELECT, for the few hot lookups where building the query
with the ORM costs more CPU than the database spends answering it (a RCPT at the inbound
listener, the sending mailbox of POST /mail/send). The instances are what select_related would
have built: the same attributes, converted the same way (SQLite's booleans and datetimes)."""
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db import connection
from django.db.models import Model


@dataclass(frozen=True)
class Columns:
    """One model's columns in a hand-written SELECT, and how their values become an instance (the
    converters the ORM would apply)."""

    model: type[Model]
    sql: str
    attnames: list[str]
    converters: list[tuple[int, Callable, object]]  # (value's index, converter, its column expression)

    @classmethod
    def of(cls, model: type[Model], alias: str) -> "Columns":
        quote, fields = connection.ops.quote_name, model._meta.concrete_fields
        converters = []
        for index, field in enumerate(fields):
            column = field.get_col(alias)
            converters.extend((index, converter, column) for converter in
                              connection.ops.get_db_converters(column) + column.get_db_converters(connection))
        return cls(model, ", ".join(f"{quote(alias)}.{quote(field.column)}" for field in fields),
                   [field.attname for field in fields], converters)

    def __len__(self) -> int:
        return len(self.attnames)

    def instance(self, values: tuple) -> Model:
        values = list(values)
        for index, converter, column in self.converters:
            values[index] = converter(values[index], column, connection)
        return self.model.from_db(connection.alias, self.attnames, values)


def instances(row: tuple, *columns: Columns) -> Iterator[Model]:
    """One instance per Columns, read from consecutive slices of the row, in order."""
    start = 0
    for part in columns:
        yield part.instance(row[start:start + len(part)])
        start += len(part)


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)
