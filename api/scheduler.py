"""/cron and /var: a mind's scheduled jobs, their runs, and its variables (the client's
`scheduler`), for its agent (Mind Key) or a person who may reach the mind (`?mind=`: read to
list, write to change). Bodies are judged by scheduler/rules.py.

Also how the paths on this server a job may name run: as the mind's agent, in-process
(`register_local_runners`, called when the app starts).
"""

from __future__ import annotations

import re
from typing import Any
from zoneinfo import available_timezones

from django.http import QueryDict
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.compact import compaction_to_dict
from api.hygiene import LIMIT_DEFAULT, contradictions_answer
from api.memories import MIND_PARAM, actor_for_request
from api.params import param_duration, param_limit
from api.scoping import mind_for_request
from core.errors import CoreError
from memories.actors import Actor
from memories.fields import KEY_PATTERN
from memories.hygiene.compact import memory_compact
from memories.hygiene.contradictions import DEFAULT_WITHIN
from memories.models import MAX_KEY_LENGTH
from memories.selectors import LIST_LIMIT_MAX
from minds.access import Level, MindAgent
from minds.models import Mind
from scheduler import rules, selectors, services
from scheduler.models import CronJob
from scheduler.runner import LocalRunner, register_local
from synapse_site.errors import core_error_response
from webhooks.models import MAX_URL_LENGTH

CRON_ID = r"cron_[a-z0-9]+"
# A variable's key as a memory's: anything but whitespace and control characters.
VAR_KEY = r"[^\s/][^\s]*?"


# --- The schema (documentation only: the core judges every body) --------------------------------

# Steps, numbers in range: a subset of what the rule takes (lists, ranges and names too), with
# days of the month up to 28 so that every schedule it describes fires.
_STEP = r"\*(/[1-9][0-9]?)?"
SCHEDULE_SCHEMA = {
    "type": "string",
    "pattern": (
        rf"^({_STEP}|[0-5]?[0-9]) ({_STEP}|[01]?[0-9]|2[0-3]) "
        rf"({_STEP}|0?[1-9]|1[0-9]|2[0-8]) ({_STEP}|0?[1-9]|1[0-2]) ({_STEP}|[0-7])$"
    ),
    "description": "5-field cron: minute hour day-of-month month day-of-week (*/15 * * * *); "
    "lists (1,15), ranges (9-17) and names (MON-FRI) work too.",
}
_LOCAL = "|".join(re.escape(path) for path in rules.LOCAL_ENDPOINTS)
ENDPOINT_SCHEMA = {
    "type": "string",
    "maxLength": MAX_URL_LENGTH,
    "pattern": rf"^(({_LOCAL})(\?[!-~]*)?|https://[A-Za-z0-9.:_\[\]-]+(/[!-~]*)?)$",
    "description": f"A path on this server ({', '.join(rules.LOCAL_ENDPOINTS)}, a query "
    "allowed), run as the mind's agent with its own method; or an https URL on a public "
    "address.",
}

# A header name: a token of at most MAX_HEADER_NAME_LENGTH characters, none of the reserved
# names in any case.
_RESERVED = "|".join(
    "".join(f"[{ch.upper()}{ch}]" if ch.isalpha() else ch for ch in name)
    for name in sorted(rules.RESERVED_HEADERS)
)
_TOKEN = rules.HEADER_NAME_PATTERN.strip("^$").removesuffix("+")
HEADER_NAME_SCHEMA_PATTERN = rf"^(?!({_RESERVED})$){_TOKEN}{{1,{rules.MAX_HEADER_NAME_LENGTH}}}$"
HEADERS_SCHEMA = {
    "type": "object",
    "maxProperties": rules.MAX_HEADERS,
    "patternProperties": {
        HEADER_NAME_SCHEMA_PATTERN: {
            "type": "string",
            "pattern": rules.HEADER_VALUE_PATTERN,
            "maxLength": rules.MAX_HEADER_VALUE_LENGTH,
        }
    },
    "additionalProperties": False,
    "description": "For an outside URL (none for a path on this server): stored sealed, shown "
    f"back masked. Not {', '.join(sorted(rules.RESERVED_HEADERS))}: the server sets those.",
}
NAME_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.MAX_NAME_LENGTH,
    "pattern": r"^[^\x00]*[^\s\x00][^\x00]*$",
}


@extend_schema_field(SCHEDULE_SCHEMA)
class ScheduleField(serializers.CharField):
    pass


@extend_schema_field(ENDPOINT_SCHEMA)
class EndpointField(serializers.CharField):
    pass


@extend_schema_field(HEADERS_SCHEMA)
class HeadersField(serializers.DictField):
    pass


@extend_schema_field(NAME_SCHEMA)
class NameField(serializers.CharField):
    pass


@extend_schema_field({"type": "string", "enum": sorted(available_timezones())})
class TimezoneField(serializers.CharField):
    pass


@extend_schema_field(
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KEY_LENGTH,
        "pattern": KEY_PATTERN,
        "description": "As a memory's key: no whitespace or control characters.",
    }
)
class KeyField(serializers.CharField):
    pass


@extend_schema_field(
    {
        "type": "string",
        "pattern": r"^[^\x00]*$",
        # Characters; the rule counts UTF-8 bytes.
        "maxLength": rules.MAX_VALUE_BYTES // 4,
        "description": f"At most {rules.MAX_VALUE_BYTES // 1024} KB of UTF-8; no NUL.",
    }
)
class ValueField(serializers.CharField):
    pass


class CronWriteSerializer(serializers.Serializer[Any]):
    """The body of POST /cron."""

    schema_server_fields = ()  # a strict body: an unknown field is a 400

    name = NameField()
    schedule = ScheduleField()
    timezone = TimezoneField(
        required=False, help_text="The IANA time zone the schedule is read in; default UTC."
    )
    endpoint = EndpointField()
    method = serializers.ChoiceField(
        choices=list(rules.METHODS),
        required=False,
        help_text="Default GET; a path on this server runs with its own.",
    )
    headers = HeadersField(required=False)
    body = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text=f"A string or JSON, at most {rules.MAX_BODY_BYTES // 1024} KB.",
    )
    enabled = serializers.BooleanField(required=False, help_text="Default true.")


class VariableWriteSerializer(serializers.Serializer[Any]):
    """The body of POST /var."""

    schema_server_fields = ()

    key = KeyField()
    value = ValueField(allow_blank=True)


# What a run's status may be (named RunStatusEnum in the schema: settings.py).
RUN_STATUSES = tuple(CronJob.Status.values)


@extend_schema_field({"type": "string", "enum": list(RUN_STATUSES)})
class RunStatusField(serializers.CharField):
    """ok (a 2xx answer) or failed."""


CRON_JOB = inline_serializer(
    "CronJob",
    {
        "id": serializers.CharField(),
        "name": serializers.CharField(),
        "schedule": serializers.CharField(),
        "timezone": serializers.CharField(),
        "endpoint": serializers.CharField(),
        "method": serializers.CharField(),
        "headers": serializers.DictField(child=serializers.CharField(), help_text="Values masked."),
        "body": serializers.JSONField(allow_null=True),
        "enabled": serializers.BooleanField(),
        "last_run_at": serializers.DateTimeField(allow_null=True),
        "last_status": RunStatusField(allow_null=True, help_text="Of the last run."),
        "next_run_at": serializers.DateTimeField(allow_null=True),
        "created_at": serializers.DateTimeField(),
    },
)
CRON_RUN = inline_serializer(
    "CronRun",
    {
        "started_at": serializers.DateTimeField(),
        "status": RunStatusField(),
        "response_status": serializers.IntegerField(allow_null=True),
        "duration_ms": serializers.IntegerField(),
        "response_preview": serializers.CharField(help_text="The first bytes of the answer."),
    },
)
VARIABLE = inline_serializer(
    "Variable",
    {
        "key": serializers.CharField(),
        "value": serializers.CharField(),
        "updated_at": serializers.DateTimeField(),
    },
)
CRON_ID_PARAM = OpenApiParameter(
    "cron_id", {"type": "string", "pattern": f"^{CRON_ID}$"}, OpenApiParameter.PATH
)
KEY_PARAM = OpenApiParameter("key", str, OpenApiParameter.PATH)


def job_for_request(request: Request, cron_id: str, *, need: Level) -> CronJob:
    """The caller's mind's job; 404 for any other."""
    return selectors.cron_get(mind=mind_for_request(request, need=need), job_id=cron_id)


# --- Views ---------------------------------------------------------------------------------------


class CronListView(APIView):
    @extend_schema(
        operation_id="cron_list",
        summary="The mind's cron jobs, oldest first",
        parameters=[MIND_PARAM],
        responses=inline_serializer(
            "CronList",
            {"crons": serializers.ListField(child=CRON_JOB), "total": serializers.IntegerField()},
        ),
    )
    def get(self, request: Request) -> Response:
        jobs = selectors.cron_list(mind=mind_for_request(request, need=Level.READ))
        return Response({"crons": [selectors.job_to_dict(j) for j in jobs], "total": len(jobs)})

    @extend_schema(
        operation_id="cron_create",
        summary="Schedule a job: a path on this server or an https URL, on a cron schedule",
        description=(
            "A bad schedule is a 400 naming `schedule` and saying why. An outside URL on a "
            "loopback, private or link-local address is a 400 naming `endpoint`."
        ),
        parameters=[MIND_PARAM],
        request=CronWriteSerializer,
        responses={201: CRON_JOB},
    )
    def post(self, request: Request) -> Response:
        job = services.cron_create(
            mind=mind_for_request(request, need=Level.WRITE),
            body=request.data,
            actor=actor_for_request(request),
        )
        return Response(selectors.job_to_dict(job), status=status.HTTP_201_CREATED)


class CronDetailView(APIView):
    @extend_schema(
        operation_id="cron_destroy",
        summary="Delete the job and its runs",
        parameters=[CRON_ID_PARAM, MIND_PARAM],
        responses={
            200: inline_serializer(
                "CronDeleted",
                {"deleted": serializers.BooleanField(), "id": serializers.CharField()},
            )
        },
    )
    def delete(self, request: Request, cron_id: str) -> Response:
        job = job_for_request(request, cron_id, need=Level.WRITE)
        services.cron_delete(job=job, actor=actor_for_request(request))
        return Response({"deleted": True, "id": cron_id})


class CronToggleView(APIView):
    @extend_schema(
        operation_id="cron_toggle",
        summary="Enable a disabled job or disable an enabled one",
        description="An enabled job is next due at its schedule's next time from now.",
        parameters=[CRON_ID_PARAM, MIND_PARAM],
        request=None,
        responses=CRON_JOB,
    )
    def post(self, request: Request, cron_id: str) -> Response:
        job = job_for_request(request, cron_id, need=Level.WRITE)
        job = services.cron_toggle(job=job, actor=actor_for_request(request))
        return Response(selectors.job_to_dict(job))


class CronRunsView(APIView):
    @extend_schema(
        operation_id="cron_runs",
        summary="The job's runs, newest first",
        parameters=[
            CRON_ID_PARAM,
            MIND_PARAM,
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": selectors.RUNS_MAX},
                description=f"1 to {selectors.RUNS_MAX}, default {selectors.RUNS_DEFAULT}; "
                f"`total` counts the runs kept (the last {selectors.RUNS_MAX}).",
            ),
        ],
        responses=inline_serializer(
            "CronRuns",
            {"runs": serializers.ListField(child=CRON_RUN), "total": serializers.IntegerField()},
        ),
    )
    def get(self, request: Request, cron_id: str) -> Response:
        limit = param_limit(
            request.query_params, default=selectors.RUNS_DEFAULT, maximum=selectors.RUNS_MAX
        )
        job = job_for_request(request, cron_id, need=Level.READ)
        runs, total = selectors.cron_runs(job=job, limit=limit)
        return Response({"runs": [selectors.run_to_dict(r) for r in runs], "total": total})


class VariableListView(APIView):
    @extend_schema(
        operation_id="var_list",
        summary="The mind's variables, by key",
        parameters=[MIND_PARAM],
        responses=inline_serializer(
            "VariableList",
            {
                "variables": serializers.ListField(child=VARIABLE),
                "total": serializers.IntegerField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        found = selectors.variable_list(mind=mind_for_request(request, need=Level.READ))
        return Response(
            {"variables": [selectors.variable_to_dict(v) for v in found], "total": len(found)}
        )

    @extend_schema(
        operation_id="var_set",
        summary="Set a variable: 201 when created, 200 when replaced",
        description="Its key's and value's bytes count in the mind's storage quota "
        "(SYNAPSE_MAX_MIND_BYTES; past it, a 409).",
        parameters=[MIND_PARAM],
        request=VariableWriteSerializer,
        responses={201: VARIABLE, 200: VARIABLE},
    )
    def post(self, request: Request) -> Response:
        variable, created = services.variable_set(
            mind=mind_for_request(request, need=Level.WRITE), body=request.data
        )
        return Response(
            selectors.variable_to_dict(variable),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class VariableDetailView(APIView):
    @extend_schema(
        operation_id="var_get",
        summary="One variable",
        parameters=[KEY_PARAM, MIND_PARAM],
        responses=VARIABLE,
    )
    def get(self, request: Request, key: str) -> Response:
        mind = mind_for_request(request, need=Level.READ)
        return Response(selectors.variable_to_dict(selectors.variable_get(mind=mind, key=key)))

    @extend_schema(
        operation_id="var_delete",
        summary="Delete a variable",
        parameters=[KEY_PARAM, MIND_PARAM],
        responses={
            200: inline_serializer(
                "VariableDeleted",
                {"deleted": serializers.BooleanField(), "key": serializers.CharField()},
            )
        },
    )
    def delete(self, request: Request, key: str) -> Response:
        mind = mind_for_request(request, need=Level.WRITE)
        services.variable_delete(variable=selectors.variable_get(mind=mind, key=key))
        return Response({"deleted": True, "key": key})


# --- Jobs on paths of this server ----------------------------------------------------------------


def _as_agent(mind: Mind) -> Actor:
    return Actor.for_agent(MindAgent(mind))


def _compact(mind: Mind, query: QueryDict, body: dict[str, Any]) -> Any:
    return compaction_to_dict(memory_compact(mind=mind, actor=_as_agent(mind), body=body))


def _contradictions(mind: Mind, query: QueryDict, body: dict[str, Any]) -> Any:
    within = param_duration(query, "within", default=DEFAULT_WITHIN)
    limit = param_limit(query, default=LIMIT_DEFAULT, maximum=LIST_LIMIT_MAX)
    return contradictions_answer(mind, within=within, limit=limit)


def _answered(run: Any) -> LocalRunner:
    """The runner answers as the endpoint would: its JSON, or its error's status and body."""

    def answered(mind: Mind, query: str, body: dict[str, Any]) -> tuple[int, Any]:
        try:
            return status.HTTP_200_OK, run(mind, QueryDict(query), body)
        except CoreError as error:
            refused = core_error_response(error)
            return refused.status_code, refused.data

    return answered


def register_local_runners() -> None:
    register_local("/memory/compact", _answered(_compact))
    register_local("/memory/contradictions", _answered(_contradictions))
