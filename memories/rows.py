"""How memory writes reach the database: rows inserted, upserted, and updated by primary key,
with one executemany statement per table and set of columns.

Every write of the services goes through here, one memory or a thousand. Written out
rather than `bulk_create`/`bulk_update`, which build a model instance and compile a fresh
multi-row statement per few dozen rows: on a bulk sync that work was most of the request.
Values are prepared from the model's fields as save() prepares them (`get_db_prep_save` of
the value or the field's default), with a shortcut for types a field stores unchanged; a field
whose value save() would make otherwise (`unsupported`) is refused. No signals are sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import NoneType
from typing import Any, cast

import orjson
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

Row = Mapping[str, Any]  # {attname: value}


def insert(model: type[models.Model], rows: Sequence[Row]) -> None:
    """INSERT each row; a missing value takes the field's default."""
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]
    fields = _inserted(model)
    quote = db.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        quote(model._meta.db_table),
        ", ".join(quote(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
    )
    with db.cursor() as cursor:
        cursor.executemany(sql, _prepared(db, fields, rows))


def upsert(
    model: type[models.Model], rows: Sequence[Row], *, conflict: str, replace: Iterable[str]
) -> None:
    """INSERT each row; where one with the same `conflict` column exists, set its `replace`
    columns to the new values instead (ON CONFLICT ... DO UPDATE: SQLite and PostgreSQL)."""
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]
    meta = model._meta
    fields = _inserted(model)
    quote = db.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO UPDATE SET {}".format(
        quote(meta.db_table),
        ", ".join(quote(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
        quote(cast("models.Field[Any, Any]", meta.get_field(conflict)).column),
        ", ".join(
            f"{column} = excluded.{column}"
            for column in (
                quote(cast("models.Field[Any, Any]", meta.get_field(name)).column)
                for name in replace
            )
        ),
    )
    with db.cursor() as cursor:
        cursor.executemany(sql, _prepared(db, fields, rows))


def update(
    model: type[models.Model], objects: Sequence[models.Model], names: Iterable[str]
) -> None:
    """UPDATE the fields `names` of each object, by primary key."""
    if not objects:
        return
    db = connections[DEFAULT_DB_ALIAS]
    meta = model._meta
    # `names` name concrete fields (columns), never reverse relations.
    fields = [cast("models.Field[Any, Any]", meta.get_field(name)) for name in names]
    quote = db.ops.quote_name
    sql = "UPDATE {} SET {} WHERE {} = %s".format(
        quote(meta.db_table),
        ", ".join(f"{quote(f.column)} = %s" for f in fields),
        quote(meta.pk.column),
    )
    values = _prepared(db, fields, [obj.__dict__ for obj in objects])
    with db.cursor() as cursor:
        cursor.executemany(sql, [[*row, obj.pk] for row, obj in zip(values, objects, strict=True)])


def _inserted(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    """The columns an INSERT writes, as save() picks them: all but the database's own."""
    return [
        f
        for f in model._meta.concrete_fields
        if not isinstance(f, models.AutoField) and not f.generated
    ]


def unsupported(field: models.Field[Any, Any]) -> str | None:
    """Why this module cannot write `field` as save() would, or None when it can."""
    if field.db_default is not models.NOT_PROVIDED:
        return "it has a db_default, which save() leaves to the database"
    pre_save = type(field).pre_save
    if pre_save is models.Field.pre_save:
        return None
    # The date fields' pre_save stamps the time only for auto_now and auto_now_add.
    stamps = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
    if pre_save in _DATE_PRE_SAVES and not stamps:
        return None
    return "save() makes its value in pre_save (auto_now, auto_now_add or its own)"


_DATE_PRE_SAVES = (
    models.DateField.pre_save,
    models.DateTimeField.pre_save,
    models.TimeField.pre_save,
)


def _prepared(
    db: BaseDatabaseWrapper, fields: list[models.Field[Any, Any]], rows: Iterable[Row]
) -> list[list[Any]]:
    """Each row's values for `fields`, as save() prepares them."""
    for field in fields:
        if reason := unsupported(field):
            raise TypeError(f"memories/rows.py cannot write {field}: {reason}.")
    plans = [(f, f.attname, _as_is(f), _json_text(f, db)) for f in fields]
    # A batch shares its timestamps: each distinct one is prepared once.
    times: dict[tuple[str, datetime], Any] = {}

    def prepare(
        field: models.Field[Any, Any], as_is: tuple[type, ...], json_text: bool, value: Any
    ) -> Any:
        if type(value) in as_is:
            return value
        if json_text and value is not None:
            return orjson.dumps(value).decode()
        if isinstance(value, datetime):
            key = (field.attname, value)
            if key not in times:
                times[key] = field.get_db_prep_save(value, db)
            return times[key]
        return field.get_db_prep_save(value, db)

    return [
        [
            prepare(f, as_is, json_text, row[name] if name in row else f.get_default())
            for f, name, as_is, json_text in plans
        ]
        for row in rows
    ]


# Field classes whose get_db_prep_save gives back a value of these types unchanged. Exact
# classes: a subclass may prepare its values its own way, and takes get_db_prep_save.
_UNCHANGED: dict[type[models.Field[Any, Any]], tuple[type, ...]] = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.BooleanField: (bool,),
    models.FloatField: (float,),
    models.IntegerField: (int,),
    models.SmallIntegerField: (int,),
    models.BigIntegerField: (int,),
    models.PositiveIntegerField: (int,),
    models.PositiveSmallIntegerField: (int,),
    models.PositiveBigIntegerField: (int,),
}


def _as_is(field: models.Field[Any, Any]) -> tuple[type, ...]:
    """Python types this field stores unchanged, which need no preparing."""
    if type(field) in (models.ForeignKey, models.OneToOneField):
        return _as_is(cast("models.ForeignKey[Any, Any]", field).target_field)
    plain = _UNCHANGED.get(type(field), ())
    return (*plain, NoneType) if plain else ()


def _json_text(field: models.Field[Any, Any], db: BaseDatabaseWrapper) -> bool:
    # SQLite keeps JSON as text, which orjson writes faster than json.dumps: the same JSON
    # values, in compact text with no \u escapes (tests/memories/test_rows.py).
    return db.vendor == "sqlite" and type(field) is models.JSONField and field.encoder is None


# Primary keys per UPDATE … WHERE pk IN (…): far below every database's limit on parameters.
SAME_VALUES_CHUNK = 500


def update_same(
    model: type[models.Model], objects: Sequence[models.Model], names: Iterable[str]
) -> None:
    """UPDATE the fields `names` of these objects, which all hold the same values for them:
    one statement per SAME_VALUES_CHUNK primary keys instead of one per object."""
    if not objects:
        return
    db = connections[DEFAULT_DB_ALIAS]
    meta = model._meta
    fields = [cast("models.Field[Any, Any]", meta.get_field(name)) for name in names]
    quote = db.ops.quote_name
    values = _prepared(db, fields, [objects[0].__dict__])[0]
    with db.cursor() as cursor:
        for start in range(0, len(objects), SAME_VALUES_CHUNK):
            keys = [obj.pk for obj in objects[start : start + SAME_VALUES_CHUNK]]
            sql = "UPDATE {} SET {} WHERE {} IN ({})".format(
                quote(meta.db_table),
                ", ".join(f"{quote(f.column)} = %s" for f in fields),
                quote(meta.pk.column),
                ", ".join(["%s"] * len(keys)),
            )
            cursor.execute(sql, [*values, *keys])
