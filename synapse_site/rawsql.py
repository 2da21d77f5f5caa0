"""Model instances from written-out SQL, for the queries every request runs.

`Model.objects.raw()` works out again on every call which column is which field and which
converters each needs (~50 us, five times what SQLite takes to find a row by key); `fetch`
does that once per model and connection and then only runs the query.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models.expressions import Col

# Per connection (each thread has its own), per model: attnames, and the converters by column.
_Plan = tuple[list[str], list[tuple[int, list, Col]]]
_plans: WeakKeyDictionary[Any, dict[type[models.Model], _Plan]] = WeakKeyDictionary()


def select_columns(model: type[models.Model], table_alias: str = "") -> str:
    """Every concrete column of `model`, quoted and in field order: what `fetch` expects."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    prefix = f"{table_alias}." if table_alias else ""
    return ", ".join(prefix + quote(f.column) for f in model._meta.concrete_fields)


def fetch(
    model: type[models.Model], sql: str, params: list[Any], *, using: str = DEFAULT_DB_ALIAS
) -> list[models.Model]:
    """The rows of `sql`, which selects select_columns(model), as instances of `model`, each
    value converted as the ORM converts it."""
    connection = connections[using]
    plans = _plans.setdefault(connection, {})
    plan = plans.get(model)
    if plan is None:
        plan = plans[model] = _plan(model, connection)
    names, converters = plan
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    instances = []
    for row in rows:
        values = list(row)
        for index, functions, expression in converters:
            for convert in functions:
                values[index] = convert(values[index], expression, connection)
        instances.append(model.from_db(using, names, values))
    return instances


def _plan(model: type[models.Model], connection) -> _Plan:
    fields = model._meta.concrete_fields
    converters = []
    for index, field in enumerate(fields):
        expression = Col(model._meta.db_table, field)
        functions = connection.ops.get_db_converters(expression) + field.get_db_converters(
            connection
        )
        if functions:
            converters.append((index, functions, expression))
    return [f.attname for f in fields], converters
