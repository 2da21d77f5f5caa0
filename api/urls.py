"""The agents' API: accounts, minds, memories, pictures, export and import, webhooks, chat,
and its OpenAPI schema."""

from django.urls import re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api.accounts import LoginView, LogoutView, RefreshView, RegisterView
from api.chat import (
    ChatHistoryView,
    ChatPollView,
    ChatReplyView,
    ChatSendView,
    ChatStatusView,
    ChatUnreadView,
)
from api.compact import MemoryCompactUndoView, MemoryCompactView
from api.export import MindExportView, MindImportView
from api.hygiene import MemoryContradictionsView, MemoryDuplicatesView
from api.memories import MemoryViewSet
from api.minds import MindViewSet
from api.pictures import MemoryGraphView, MemoryTimelineView
from api.recall import RecallView
from api.routers import OptionalSlashRouter
from api.scheduler import (
    CRON_ID,
    VAR_KEY,
    CronDetailView,
    CronListView,
    CronRunsView,
    CronToggleView,
    VariableDetailView,
    VariableListView,
)
from api.search import MemorySearchView, MemorySemanticSearchView
from api.webhooks import (
    DELIVERY_ID,
    WEBHOOK_ID,
    WebhookDeliveriesView,
    WebhookDeliveryView,
    WebhookDetailView,
    WebhookListView,
    WebhookRedeliverView,
    WebhookRotateSecretView,
    WebhookTestView,
)

router = OptionalSlashRouter()
router.register("memory", MemoryViewSet, basename="memory")
router.register("minds", MindViewSet, basename="mind")

urlpatterns = [
    re_path(r"^register/?$", RegisterView.as_view(), name="register"),
    re_path(r"^login/?$", LoginView.as_view(), name="login"),
    re_path(r"^token/refresh/?$", RefreshView.as_view(), name="token-refresh"),
    re_path(r"^logout/?$", LogoutView.as_view(), name="token-logout"),
    re_path(r"^api/schema/?$", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI in the site's page and colours; its start-up script is a request of its own.
    re_path(
        r"^api/docs/?$",
        SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs.html"),
        name="api-docs",
    ),
    re_path(r"^memory/recall/?$", RecallView.as_view(), name="memory-recall"),
    re_path(r"^memory/search/?$", MemorySearchView.as_view(), name="memory-search"),
    re_path(
        r"^memory/semantic-search/?$",
        MemorySemanticSearchView.as_view(),
        name="memory-semantic-search",
    ),
    re_path(r"^memory/compact/?$", MemoryCompactView.as_view(), name="memory-compact"),
    re_path(
        r"^memory/compact/(?P<summary_id>mem_[a-z0-9]+)/undo/?$",
        MemoryCompactUndoView.as_view(),
        name="memory-compact-undo",
    ),
    re_path(r"^memory/duplicates/?$", MemoryDuplicatesView.as_view(), name="memory-duplicates"),
    re_path(
        r"^memory/contradictions/?$",
        MemoryContradictionsView.as_view(),
        name="memory-contradictions",
    ),
    re_path(r"^memory/graph/?$", MemoryGraphView.as_view(), name="memory-graph"),
    re_path(r"^memory/timeline/?$", MemoryTimelineView.as_view(), name="memory-timeline"),
    re_path(r"^mind/export/?$", MindExportView.as_view(), name="mind-export"),
    re_path(r"^mind/import/?$", MindImportView.as_view(), name="mind-import"),
    re_path(r"^webhooks/?$", WebhookListView.as_view(), name="webhook-list"),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/?$",
        WebhookDetailView.as_view(),
        name="webhook-detail",
    ),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/test/?$",
        WebhookTestView.as_view(),
        name="webhook-test",
    ),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/rotate-secret/?$",
        WebhookRotateSecretView.as_view(),
        name="webhook-rotate-secret",
    ),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/deliveries/?$",
        WebhookDeliveriesView.as_view(),
        name="webhook-deliveries",
    ),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/deliveries/(?P<delivery_id>{DELIVERY_ID})/?$",
        WebhookDeliveryView.as_view(),
        name="webhook-delivery",
    ),
    re_path(
        rf"^webhooks/(?P<webhook_id>{WEBHOOK_ID})/deliveries/(?P<delivery_id>{DELIVERY_ID})"
        r"/redeliver/?$",
        WebhookRedeliverView.as_view(),
        name="webhook-redeliver",
    ),
    re_path(r"^chat/poll/?$", ChatPollView.as_view(), name="chat-poll"),
    re_path(r"^chat/reply/?$", ChatReplyView.as_view(), name="chat-reply"),
    re_path(r"^chat/status/?$", ChatStatusView.as_view(), name="chat-status"),
    re_path(r"^chat/history/?$", ChatHistoryView.as_view(), name="chat-history"),
    re_path(r"^chat/unread/?$", ChatUnreadView.as_view(), name="chat-unread"),
    re_path(r"^chat/send/?$", ChatSendView.as_view(), name="chat-send"),
    re_path(r"^cron/?$", CronListView.as_view(), name="cron-list"),
    re_path(rf"^cron/(?P<cron_id>{CRON_ID})/?$", CronDetailView.as_view(), name="cron-detail"),
    re_path(
        rf"^cron/(?P<cron_id>{CRON_ID})/toggle/?$", CronToggleView.as_view(), name="cron-toggle"
    ),
    re_path(rf"^cron/(?P<cron_id>{CRON_ID})/runs/?$", CronRunsView.as_view(), name="cron-runs"),
    re_path(r"^var/?$", VariableListView.as_view(), name="var-list"),
    re_path(rf"^var/(?P<key>{VAR_KEY})/?$", VariableDetailView.as_view(), name="var-detail"),
    *router.urls,
]
