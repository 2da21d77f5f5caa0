"""scheduler/rules.py: a job's and a variable's body, judged once for every face."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.errors import Invalid
from scheduler.rules import (
    MAX_BODY_BYTES,
    MAX_VALUE_BYTES,
    clean_schedule,
    cron_body_clean,
    mask,
    next_run,
    variable_body_clean,
)

LOCAL = {"name": "tidy", "schedule": "0 3 * * *", "endpoint": "/memory/compact", "method": "POST"}


def refused(body) -> dict[str, list[str]]:
    with pytest.raises(Invalid) as caught:
        cron_body_clean(body)
    return caught.value.fields


def test_a_local_job_is_taken_with_defaults():
    spec = cron_body_clean(LOCAL)
    assert spec.timezone == "UTC"
    assert spec.headers == {} and spec.body is None and spec.enabled is True


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("*/5 * * *", "5 fields"),
        ("* * * * * *", "got 6"),
        ("61 * * * *", "the minute field '61' is not understood (it takes 0-59"),
        ("a b c d e", "the minute field 'a'"),
        ("* 25 * * *", "the hour field '25' is not understood (it takes 0-23"),
        ("0 0 * 13 *", "the month field '13'"),
        ("*/0 * * * *", "the minute field '*/0'"),
        ("0 0 31 2 *", "never fires"),
        ("", "5-field"),
    ],
)
def test_a_bad_schedule_names_schedule_and_says_why(schedule, why):
    fields = refused({**LOCAL, "schedule": schedule})
    assert list(fields) == ["schedule"]
    assert why in fields["schedule"][0]


def test_schedules_fire_in_their_time_zone():
    after = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    assert next_run("0 9 * * *", "UTC", after=after) == datetime(2026, 7, 2, 9, 0, tzinfo=UTC)
    # 09:00 in Berlin in summer is 07:00 UTC.
    assert next_run("0 9 * * *", "Europe/Berlin", after=after) == datetime(
        2026, 7, 2, 7, 0, tzinfo=UTC
    )
    assert clean_schedule("  */15   * * * * ") == "*/15 * * * *"


def test_an_unknown_time_zone_is_refused():
    assert "IANA" in refused({**LOCAL, "timezone": "Mars/Olympus"})["timezone"][0]
    assert "timezone" in refused({**LOCAL, "timezone": "../../etc/passwd"})
    assert "timezone" in refused({**LOCAL, "timezone": "Europe"})  # a directory of zones
    assert "timezone" in refused({**LOCAL, "timezone": "tzdata.zi"})


@pytest.mark.parametrize(
    ("endpoint", "why"),
    [
        ("/memory", "must be one of"),
        ("/admin/", "must be one of"),
        ("http://example.com/x", "https://"),
        ("ftp://example.com/x", "https://"),
        ("https://127.0.0.1/x", "loopback"),
        ("https://10.0.0.8/x", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://user:pw@203.0.113.9/x", "credentials"),
        ("/memory/compact?x=\x00", "control"),
        ("https://203.0.113.9/caf\u00e9", "ASCII"),
    ],
)
def test_an_endpoint_not_allowed_names_endpoint(endpoint, why, settings, no_network):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    fields = refused({**LOCAL, "endpoint": endpoint, "method": "GET"})
    assert "endpoint" in fields and why in fields["endpoint"][0], fields


def test_a_local_path_runs_with_its_own_method_and_no_headers():
    assert cron_body_clean({**LOCAL, "method": "GET"}).method == "POST"
    assert cron_body_clean({**LOCAL, "method": None}).method == "POST"
    assert "headers" in refused({**LOCAL, "headers": {"X-Token": "secret"}})
    assert "method" in refused({**LOCAL, "method": "TRACE"})
    get = {**LOCAL, "endpoint": "/memory/contradictions?within=30d", "method": "get"}
    assert cron_body_clean(get).method == "GET"
    assert "query" in refused({**get, "body": {"x": 1}})["body"][0]
    assert "object" in refused({**LOCAL, "body": "[1, 2]"})["body"][0]
    assert cron_body_clean({**LOCAL, "body": '{"older_than": 0}'}).body == '{"older_than": 0}'


def test_headers_and_bodies_have_limits(settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    outside = {**LOCAL, "endpoint": "https://203.0.113.9/in", "method": "POST"}
    assert cron_body_clean({**outside, "headers": {"Authorization": "Bearer x"}}).headers
    assert "headers" in refused({**outside, "headers": {"Host": "evil"}})
    assert "headers" in refused({**outside, "headers": {"bad name": "x"}})
    assert "headers" in refused({**outside, "headers": {"X-A": "line\r\nX-B: injected"}})
    assert "headers" in refused({**outside, "headers": {"X-A": 5}})
    assert "headers" in refused({**outside, "headers": {"X-A": "trailing\n"}})
    assert "headers" in refused({**outside, "headers": {"X-A": "caf\u00e9"}})
    assert "headers" in refused({**outside, "headers": ["X-A"]})
    assert "body" in refused({**outside, "body": "x" * (MAX_BODY_BYTES + 1)})
    assert cron_body_clean({**outside, "body": {"a": "\x00"}}).body == {"a": "\x00"}
    assert "body" in refused({**outside, "body": "\ud800"})
    assert cron_body_clean({**outside, "body": {"a": [1, 2]}}).body == {"a": [1, 2]}


def test_unknown_fields_and_every_fault_are_named():
    fields = refused({"surprise": 1})
    assert "surprise" in fields
    fields = refused({"name": "", "schedule": "x", "endpoint": "/nope", "enabled": "yes"})
    assert {"name", "schedule", "endpoint", "enabled"} <= set(fields)
    assert "non_field_errors" in refused(["not", "an", "object"])


def test_header_values_are_never_shown_in_full():
    assert mask("short") == "****"
    assert mask("Bearer abcdefghijklmnop") == "****mnop"


def test_variables_take_keys_as_memories_and_values_up_to_64_kb():
    assert variable_body_clean({"key": "user.timezone", "value": ""}) == ("user.timezone", "")
    for body, field in [
        ({"key": "has space", "value": "x"}, "key"),
        ({"key": "", "value": "x"}, "key"),
        ({"value": "x"}, "key"),
        ({"key": "k" * 201, "value": "x"}, "key"),
        ({"key": "k"}, "value"),
        ({"key": "k", "value": None}, "value"),
        ({"key": "k", "value": 5}, "value"),
        ({"key": "k", "value": "é" * (MAX_VALUE_BYTES // 2 + 1)}, "value"),
        ({"key": "k", "value": "\ud800"}, "value"),
        ({"key": "k", "value": "x", "other": 1}, "other"),
    ]:
        with pytest.raises(Invalid) as caught:
            variable_body_clean(body)
        assert field in caught.value.fields, body
