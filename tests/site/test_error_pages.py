"""The 404 and 500 pages a person meets: a main landmark, a heading and a way home (the API
keeps its JSON errors: tests/site/test_errors.py)."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.views.defaults import server_error

pytestmark = pytest.mark.django_db


def test_a_missing_dashboard_page_is_a_page_with_a_main_a_heading_and_a_way_home(owner, settings):
    assert settings.DEBUG is False  # the normal handler, as in production
    web = Client()
    web.force_login(owner)
    response = web.get("/dashboard/minds/m_nothere/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert '<main id="main"' in html
    assert "<h1>Page not found</h1>" in html
    assert '<a href="/">Go to the home page</a>' in html
    assert "/dashboard/minds/m_nothere/" in html
    assert 'href="/dashboard/">Your minds</a>' in html


def test_a_browser_asking_for_an_unknown_path_gets_the_page_an_agent_gets_json():
    browser = Client().get("/no/such/page", HTTP_ACCEPT="text/html")
    assert browser.status_code == 404 and "<h1>Page not found</h1>" in browser.content.decode()
    agent = Client().get("/no/such/page", HTTP_ACCEPT="application/json")
    assert agent.status_code == 404 and agent.json()["error"] == "not_found"


def test_the_requested_path_is_escaped():
    response = Client().get("/x<script>alert(1)</script>", HTTP_ACCEPT="text/html")
    assert "<script>alert" not in response.content.decode()


def test_the_500_page_is_static_with_a_main_and_a_heading():
    response = server_error(RequestFactory().get("/dashboard/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert '<main id="main">' in html and "<h1>Something went wrong</h1>" in html
    assert '<a href="/">Go to the home page</a>' in html
