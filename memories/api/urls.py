from django.urls import re_path

from memories.api.export import MindExportView, MindImportView
from memories.api.recall import RecallView
from memories.api.search import MemorySearchView, MemorySemanticSearchView
from memories.api.views import MemoryViewSet
from synapse_site.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.register("memory", MemoryViewSet, basename="memory")

urlpatterns = [
    re_path(r"^memory/recall/?$", RecallView.as_view(), name="memory-recall"),
    re_path(r"^memory/search/?$", MemorySearchView.as_view(), name="memory-search"),
    re_path(
        r"^memory/semantic-search/?$",
        MemorySemanticSearchView.as_view(),
        name="memory-semantic-search",
    ),
    re_path(r"^mind/export/?$", MindExportView.as_view(), name="mind-export"),
    re_path(r"^mind/import/?$", MindImportView.as_view(), name="mind-import"),
    *router.urls,
]
