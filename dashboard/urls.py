"""/dashboard/…: the human side. Every write calls the same services as the API."""

from __future__ import annotations

from django.urls import path

from dashboard.views import bulk, chat, hygiene, memories, minds, oauth, sharing, webhooks
from dashboard.views.graph import mind_graph

app_name = "dashboard"

MIND = "minds/<str:mind_id>/"
MEMORY = MIND + "memories/<str:memory_id>/"
WEBHOOK = MIND + "webhooks/<str:webhook_id>/"
DELIVERY = WEBHOOK + "deliveries/<str:delivery_id>/"
SHARE = MIND + "shares/<str:share_id>/"

urlpatterns = [
    path("", minds.mind_list, name="minds"),
    path("minds/new/", minds.mind_new, name="mind-new"),
    path(MIND, minds.mind_overview, name="mind"),
    path(MIND + "key/", minds.mind_key, name="mind-key"),
    path(MIND + "rotate-key/", minds.mind_rotate, name="mind-rotate"),
    path(MIND + "revoke-key/", minds.mind_revoke, name="mind-revoke"),
    path(MIND + "settings/", minds.mind_settings, name="mind-settings"),
    path(MIND + "delete/", minds.mind_delete_confirm, name="mind-delete"),
    path(MIND + "shares/", sharing.share_invite, name="share-invite"),
    path(SHARE, sharing.share_change, name="share-change"),
    path(SHARE + "revoke/", sharing.share_revoke, name="share-revoke"),
    path(
        MIND + "connections/<int:connection_id>/revoke/",
        oauth.connection_revoke,
        name="connection-revoke",
    ),
    path(MIND + "memories/", memories.memory_table, name="memories"),
    path(MIND + "review/", memories.review_queue, name="review"),
    path(MIND + "review/verify/", bulk.bulk_change, {"action": "verify"}, name="bulk-verify"),
    path(MIND + "memories/bulk/<str:action>/", bulk.bulk_change, name="bulk"),
    path(MIND + "memories/verify-all/", memories.verify_matching, name="verify-matching"),
    path(MIND + "undo/", memories.memory_undo_view, name="undo"),
    path(MIND + "undo-batch/", bulk.batch_undo, name="undo-batch"),
    path(MIND + "activity/", memories.activity, name="activity"),
    path(MIND + "graph/", mind_graph, name="graph"),
    path(MIND + "hygiene/", hygiene.hygiene, name="hygiene"),
    path(MIND + "hygiene/compact/", hygiene.compact, name="hygiene-compact"),
    path(MIND + "hygiene/keep/", hygiene.supersede_into, name="hygiene-keep"),
    path(MIND + "hygiene/keep-all/", hygiene.keep_both, name="hygiene-keep-all"),
    path(MEMORY + "uncompact/", hygiene.compact_undo_view, name="hygiene-uncompact"),
    path(MEMORY + "supersede/", hygiene.supersede, name="hygiene-supersede"),
    path(
        MEMORY + "proposals/<str:proposal_id>/reject/",
        hygiene.reject_proposal,
        name="hygiene-reject",
    ),
    path(MIND + "webhooks/", webhooks.webhooks, name="webhooks"),
    path(WEBHOOK, webhooks.webhook_detail, name="webhook"),
    path(WEBHOOK + "enable/", webhooks.webhook_enable, name="webhook-enable"),
    path(WEBHOOK + "test/", webhooks.webhook_send_test, name="webhook-test"),
    path(WEBHOOK + "new-secret/", webhooks.webhook_rotate, name="webhook-rotate"),
    path(WEBHOOK + "delete/", webhooks.webhook_delete_confirm, name="webhook-delete"),
    path(DELIVERY, webhooks.delivery_detail, name="webhook-delivery"),
    path(DELIVERY + "redeliver/", webhooks.delivery_redeliver_view, name="webhook-redeliver"),
    path(MEMORY, memories.memory_detail, name="memory"),
    path(MEMORY + "edit/", memories.memory_edit, name="memory-edit"),
    path(MEMORY + "verify/", memories.memory_verify_view, name="memory-verify"),
    path(MEMORY + "unverify/", memories.memory_unverify_view, name="memory-unverify"),
    path(MEMORY + "delete/", memories.memory_delete_confirm, name="memory-delete"),
    path(MEMORY + "restore/<int:event_id>/", memories.memory_restore, name="memory-restore"),
    path(MIND + "chat/", chat.chat, name="chat"),
    path(MIND + "chat/messages/", chat.chat_messages, name="chat-messages"),
    path(MIND + "chat/<int:number>/remember/", chat.chat_remember_view, name="chat-remember"),
]
