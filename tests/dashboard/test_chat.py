"""The Chat tab: the conversation, writing (write level), the messages chat.js fetches, the
unread badge on the mind list and the tabs, and "Remember this"."""

from __future__ import annotations

import pytest
from django.test import Client

from chat.models import ChatMessage
from chat.rules import MAX_CONTENT_LENGTH
from chat.services import chat_reply, chat_send
from memories.models import Memory
from tests.dashboard.conftest import AGENT
from tests.factories import share_make, user_make

pytestmark = pytest.mark.django_db


def url(mind, suffix: str = "") -> str:
    return f"/dashboard/minds/{mind.pk}/chat/{suffix}"


def reply(mind, content="The answer"):
    return chat_reply(mind=mind, actor=AGENT, body={"content": content})


def browser_for(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_tab_shows_the_conversation_as_a_polite_live_log(web, mind, owner):
    chat_send(mind=mind, user=owner, body={"content": "Where are the keys?"})
    reply(mind, "In the drawer\n<b>left</b>")
    page = web.get(url(mind)).content.decode()
    assert 'aria-live="polite"' in page and 'id="chat-log"' in page
    assert "Where are the keys?" in page and "In the drawer<br>&lt;b&gt;left&lt;/b&gt;" in page
    assert 'data-after="2"' in page and "js/chat.js" in page
    assert '<label for="chat-content">' in page
    assert 'aria-current="page">Chat' in page


def test_writing_sends_and_comes_back_without_script(web, mind, owner):
    response = web.post(url(mind), {"content": "Please check the backups"})
    assert response.status_code == 302 and response["Location"] == url(mind) + "#chat-form"
    message = ChatMessage.objects.get()
    assert (message.role, message.author, message.content) == (
        "human",
        owner,
        "Please check the backups",
    )


@pytest.mark.parametrize("content", ["", "   ", "x" * (MAX_CONTENT_LENGTH + 1)])
def test_a_bad_message_is_shown_back_with_why(web, mind, content):
    response = web.post(url(mind), {"content": content})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'role="alert"' in page and 'aria-invalid="true"' in page
    assert not ChatMessage.objects.exists()


def test_new_messages_come_as_list_items_after_a_number(web, mind, owner):
    chat_send(mind=mind, user=owner, body={"content": "one"})
    reply(mind, "two")
    answer = web.get(url(mind, "messages/"), {"after": 1}).json()
    assert answer["last"] == 2 and answer["agent_online"] is False
    assert 'id="message-2"' in answer["html"] and "two" in answer["html"]
    assert 'id="message-1"' not in answer["html"]
    assert web.get(url(mind, "messages/"), {"after": 2}).json()["last"] == 2
    assert web.get(url(mind, "messages/"), {"after": "x"}).status_code == 400
    assert web.post(url(mind, "messages/")).status_code == 405


def test_the_unread_badge_shows_until_the_chat_is_opened(web, mind):
    reply(mind)
    reply(mind)
    listing = web.get("/dashboard/").content.decode()
    assert "2 unread in chat" in listing
    overview = web.get(f"/dashboard/minds/{mind.pk}/").content.decode()
    assert 'badge-unread">2<span class="visually-hidden"> unread' in overview
    web.get(url(mind))  # read now
    assert "unread in chat" not in web.get("/dashboard/").content.decode()
    assert ChatMessage.objects.filter(read_at__isnull=True).count() == 0


def test_fetching_new_messages_marks_the_agents_read(web, mind):
    reply(mind)
    web.get(url(mind, "messages/"), {"after": 0})
    assert ChatMessage.objects.get().read_at is not None


def test_remember_this_makes_a_verified_persons_note(web, mind, owner):
    reply(mind, "The server runs Debian 12")
    response = web.post(url(mind, "1/remember/"))
    assert response.status_code == 302 and response["Location"].endswith("#message-1")
    memory = Memory.objects.get(mind=mind)
    assert memory.content == "The server runs Debian 12"
    assert memory.source == "user" and memory.verified and memory.tags == ["chat"]
    assert web.post(url(mind, "9/remember/")).status_code == 404
    assert web.get(url(mind, "1/remember/")).status_code == 405


def test_a_reader_reads_but_cannot_write_or_remember(mind):
    reader = user_make("reader@example.com")
    share_make(mind, reader, "read")
    browser = browser_for(reader)
    reply(mind, "hello")
    page = browser.get(url(mind))
    assert page.status_code == 200 and "hello" in page.content.decode()
    assert 'id="chat-form"' not in page.content.decode()
    assert "chat-remember" not in page.content.decode()
    assert browser.post(url(mind), {"content": "hi"}).status_code == 403
    assert browser.post(url(mind, "1/remember/")).status_code == 403
    assert ChatMessage.objects.count() == 1 and not Memory.objects.exists()


def test_a_writer_writes_under_their_own_name(mind, owner):
    writer = user_make("writer@example.com")
    share_make(mind, writer, "write")
    browser_for(writer).post(url(mind), {"content": "From the writer"})
    chat_send(mind=mind, user=owner, body={"content": "From the owner"})
    page = browser_for(writer).get(url(mind)).content.decode()
    assert owner.email in page and ">You<" in page
    assert ChatMessage.objects.get(number=1).author == writer


def test_another_persons_mind_is_404(other_web, mind, owner):
    chat_send(mind=mind, user=owner, body={"content": "private"})
    assert other_web.get(url(mind)).status_code == 404
    assert other_web.get(url(mind, "messages/")).status_code == 404
    assert other_web.post(url(mind), {"content": "x"}).status_code == 404
    assert other_web.post(url(mind, "1/remember/")).status_code == 404
    assert ChatMessage.objects.count() == 1
