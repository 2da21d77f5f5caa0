"""The admin shows chat messages and the chat's audit entries, and changes nothing."""

from __future__ import annotations

import pytest

from chat.models import ChatEvent, ChatMessage
from chat.services import chat_send

pytestmark = pytest.mark.django_db


def test_staff_read_messages_and_audit_entries_and_cannot_change_them(admin_client, mind, owner):
    chat_send(mind=mind, user=owner, body={"content": "Visible to staff"})
    message, event = ChatMessage.objects.get(), ChatEvent.objects.get()
    listing = admin_client.get("/admin/chat/chatmessage/")
    assert listing.status_code == 200 and "Visible to staff" in listing.content.decode()
    assert admin_client.get("/admin/chat/chatevent/").status_code == 200
    page = admin_client.get(f"/admin/chat/chatmessage/{message.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert admin_client.get("/admin/chat/chatmessage/add/").status_code == 403
    assert admin_client.post(f"/admin/chat/chatevent/{event.pk}/delete/").status_code == 403
    assert ChatMessage.objects.count() == 1 and ChatEvent.objects.count() == 1
