"""The memory record, its tags, its audit trail and idempotency records."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.db.models import Q
from django.utils import timezone

from synapse_site.ids import random_id


class Category(models.TextChoices):
    IDENTITY = "identity"
    PREFERENCE = "preference"
    FACT = "fact"
    PROJECT = "project"
    SKILL = "skill"
    MISTAKE = "mistake"
    CONTEXT = "context"
    NOTE = "note"


class Priority(models.IntegerChoices):
    # Stored as a rank so "critical first, then most recently updated" is one index scan.
    LOW = 0, "low"
    NORMAL = 1, "normal"
    HIGH = 2, "high"
    CRITICAL = 3, "critical"

    @classmethod
    def from_name(cls, name: str) -> Priority:
        return {p.label: p for p in cls}[name]


class Source(models.TextChoices):
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    SYSTEM = "system"


MAX_CONTENT_LENGTH = 50_000
MAX_KEY_LENGTH = 200
MAX_TAGS = 20
MAX_TAG_LENGTH = 64


def new_memory_id() -> str:
    return random_id("mem_")


def new_proposal_id() -> str:
    return random_id("prop_")


def live_q(now: datetime, prefix: str = "") -> Q:
    """Not expired at `now`: no expiry, or one still in the future. `prefix` reaches the
    memory through a relation (`memories__`)."""
    return Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now})


def has_expired(expires_at: datetime | None, now: datetime | None = None) -> bool:
    """Whether a memory expiring at `expires_at` has expired at `now` (expired_q in Python)."""
    return expires_at is not None and expires_at <= (now or timezone.now())


def expired_q(now: datetime, prefix: str = "") -> Q:
    return Q(**{f"{prefix}expires_at__lte": now})


def expiring_q(now: datetime, within: timedelta, prefix: str = "") -> Q:
    """Not expired yet, and expiring within `within` of `now`."""
    return Q(**{f"{prefix}expires_at__gt": now, f"{prefix}expires_at__lte": now + within})


class MemoryQuerySet(models.QuerySet["Memory"]):
    def live(self, now: datetime) -> MemoryQuerySet:
        return self.filter(live_q(now))

    def expired(self, now: datetime) -> MemoryQuerySet:
        return self.filter(expired_q(now))

    def recall_order(self) -> MemoryQuerySet:
        return self.order_by("-priority", "-updated_at", "-id")


class Memory(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_memory_id, editable=False)
    # No index of its own: every composite index below starts with mind_id.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="memories", db_index=False
    )
    category = models.CharField(max_length=16, choices=Category.choices)
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    content = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    priority = models.PositiveSmallIntegerField(choices=Priority.choices, default=Priority.NORMAL)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.AGENT)
    verified = models.BooleanField(default=False)
    confidence = models.FloatField(default=0.7)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    verified_at = models.DateTimeField(null=True, blank=True)
    verified_by = models.CharField(max_length=254, blank=True)
    # The memory that replaced this one (memories/hygiene/supersede.py): a superseded memory
    # leaves recall, search and lists unless asked for, and comes back when its successor
    # goes. Served by the indexes below, which end in it: no index of its own.
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        db_index=False,
        related_name="superseded",
    )

    objects = MemoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "memories"
        constraints = [
            models.UniqueConstraint(
                fields=["mind", "category", "key"], name="memory_unique_key_per_mind"
            ),
            models.CheckConstraint(
                condition=Q(category__in=Category.values), name="memory_category_valid"
            ),
            models.CheckConstraint(
                condition=Q(source__in=Source.values), name="memory_source_valid"
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=0, priority__lte=3), name="memory_priority_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0.0, confidence__lte=1.0),
                name="memory_confidence_range",
            ),
        ]
        indexes = [
            models.Index(
                # The whole recall order (recall_order()): recall reads the rows in index
                # order with no sort step.
                fields=["mind", "-priority", "-updated_at", "-id"],
                name="memory_recall_idx",
            ),
            models.Index(fields=["mind", "expires_at"], name="memory_expiry_idx"),
            # What a memory superseded (its successor's undo, compaction's plans).
            models.Index(
                fields=["superseded_by"],
                condition=Q(superseded_by__isnull=False),
                name="memory_superseded_idx",
            ),
            # The review order (SORTS["review"]) and the expiry: the unverified are counted,
            # and any page of the queue found, from the index alone (rows read: the page's).
            models.Index(
                fields=[
                    "mind",
                    "verified",
                    "-priority",
                    "confidence",
                    "-updated_at",
                    "id",
                    "expires_at",
                    "superseded_by",
                ],
                name="memory_review_idx",
            ),
            # The same for the default order, most recently updated first (and diffs by time).
            models.Index(
                fields=["mind", "updated_at", "id", "expires_at", "superseded_by"],
                name="memory_updated_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.category}/{self.key}"

    @property
    def priority_name(self) -> str:
        return Priority(self.priority).label

    def is_expired(self, now: datetime | None = None) -> bool:
        return has_expired(self.expires_at, now)


class MemoryVector(models.Model):
    """A memory's embedding, for search by meaning (memories/embeddings/). The background
    worker computes it from the memory's text under `model`; `text_hash` is the digest of the
    text it embedded, so a vector whose memory has changed since is known to be stale."""

    memory = models.OneToOneField(
        Memory, on_delete=models.CASCADE, primary_key=True, related_name="vector"
    )
    # Served by the (mind, model) index: no index of its own.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    model = models.CharField(max_length=100)
    text_hash = models.CharField(max_length=32)
    # float32 values, L2-normalised, in the machine's byte order as numpy writes them.
    vector = models.BinaryField()
    embedded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["mind", "model"], name="memory_vector_mind_idx")]

    def __str__(self) -> str:
        return f"{self.memory_id} ({self.model})"


class VectorsVersion(models.Model):
    """A number that moves whenever one of the mind's vectors is stored, replaced or
    deleted, kept by triggers on MemoryVector's table (memories/search/semantic.py): the
    search cache reads it by key to know its copy of the mind's vectors is current."""

    mind = models.OneToOneField(
        "minds.Mind", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.mind_id} (version {self.version})"


class EmbeddingJob(models.Model):
    """A memory whose vector is missing or stale: written in the same transaction as the write
    that makes it so, removed by the worker once the vector is stored (or the memory is gone).
    A crash at any moment leaves the row, so the work is done again, never lost.

    A job the embedder refuses on its own is tried again later (`due_at`, `attempts`), and
    after MAX_ATTEMPTS is parked: `due_at` empty, kept with its `last_error` until the memory
    is written again or an operator retries it (memories/embeddings/outbox.py)."""

    # Not a foreign key: the job of a memory deleted meanwhile is simply dropped.
    memory_id = models.CharField(primary_key=True, max_length=32)
    mind_id = models.CharField(max_length=32)
    queued_at = models.DateTimeField(default=timezone.now)
    # When the worker may take it: `queued_at` at first, later after a failure; None: parked.
    due_at = models.DateTimeField(null=True, default=timezone.now)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        # The worker serves minds in turn, each mind's jobs in due order: one index walks
        # both (outbox._fair_jobs), and counts a mind's pending and parked jobs.
        indexes = [
            models.Index(fields=["mind_id", "due_at", "memory_id"], name="embedding_job_turn_idx")
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} (queued {self.queued_at:%Y-%m-%d %H:%M:%S})"

    @property
    def parked(self) -> bool:
        return self.due_at is None


class MemoryTag(models.Model):
    """One row per (memory, tag): tag filters, counts and relatedness use its index."""

    # Served by the unique (memory, tag) and the (mind, tag) indexes; no single-column ones.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="tag_rows", db_index=False
    )
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    tag = models.CharField(max_length=MAX_TAG_LENGTH)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "tag"], name="memory_tag_unique"),
        ]
        indexes = [models.Index(fields=["mind", "tag"], name="memory_tag_lookup_idx")]

    def __str__(self) -> str:
        return self.tag


class MemoryEvent(models.Model):
    """The audit trail: who did what to which memory, with the values it replaced.

    A `delete` event is also the tombstone that incremental sync (`/memory/diff`) reads; an
    `undelete` puts that memory back under the same id.
    The values a mind's events hold are bounded by its history budget: past it, the oldest
    events' values are folded and the rows stay (memories/audit.py).
    """

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"
        VERIFY = "verify"
        UNVERIFY = "unverify"
        SUPERSEDE = "supersede"
        PURGE = "purge"
        # A delete undone: the memory is back under its id, every value as the delete left it.
        UNDELETE = "undelete"

    class ActorType(models.TextChoices):
        USER = "user"
        AGENT = "agent"
        SYSTEM = "system"

    # Served by the (mind, at) index.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, related_name="memory_events", db_index=False
    )
    # Served by the (memory_id, at) index.
    memory_id = models.CharField(max_length=32)
    category = models.CharField(max_length=16)
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    action = models.CharField(max_length=10, choices=Action.choices)
    actor = models.CharField(max_length=254)
    actor_type = models.CharField(max_length=8, choices=ActorType.choices)
    at = models.DateTimeField(default=timezone.now)
    # {field: {"old": value, "new": value}} for what changed; on delete, every old value.
    # A field whose values were folded (memories/audit.py) holds FOLDED instead.
    changes = models.JSONField(default=dict, blank=True)
    # The bytes of `changes` as JSON: what the event holds of the mind's history budget
    # (Mind.history_bytes). 0 once its values are folded.
    size = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["mind", "-at"], name="memory_event_mind_at_idx"),
            models.Index(fields=["mind", "action", "at"], name="memory_event_action_idx"),
            # A memory's rows, in time: its history, and a rebuild's rows since a moment.
            models.Index(fields=["memory_id", "at"], name="memory_event_memory_at_idx"),
            # The mind's oldest events still holding values, which folding reads first:
            # folded ones are left out, so finding them never walks past the folded.
            models.Index(
                fields=["mind", "at", "id"],
                condition=Q(size__gt=0),
                name="memory_event_unfolded_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id} by {self.actor}"


class MemorySpan(models.Model):
    """What orders, narrows and counts a memory in a recall, over one span of time its values
    held: from `start` (the write that left them) to `end` (the next write of the memory;
    None while they hold). Written beside every audited write (memories/spans.py), so a
    recall as of a moment reads the mind then as today's recall reads it now. Its other
    values are read from the memory, or from the audit trail when written since."""

    # Served by the (mind, end, …) index.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    memory_id = models.CharField(max_length=32, db_index=True)
    start = models.DateTimeField()
    end = models.DateTimeField(null=True, blank=True)
    category = models.CharField(max_length=16)
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    priority = models.PositiveSmallIntegerField()
    verified = models.BooleanField()
    expires_at = models.DateTimeField(null=True, blank=True)
    # The memory that superseded it, "" when none.
    superseded_by = models.CharField(max_length=32, blank=True, default="")
    # The memory's tags as JSON text (memories/spans.py: a tag is found as its JSON string).
    tags = models.TextField(default="[]")
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # The spans the writes since a moment ended or opened, with what a recall reads
            # of them (unless it is narrowed by category or tag): read from the index alone.
            models.Index(
                fields=[
                    "mind",
                    "end",
                    "start",
                    "verified",
                    "priority",
                    "expires_at",
                    "superseded_by",
                    "updated_at",
                    "memory_id",
                    "key",
                ],
                name="memory_span_end_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} from {self.start}"


class SupersedeProposal(models.Model):
    """An agent's wish that `by` supersede the verified `memory`: it waits for a person, who
    accepts it (the supersede is written) or rejects it (the row goes). Until then the
    verified memory stays current."""

    id = models.CharField(primary_key=True, max_length=32, default=new_proposal_id, editable=False)
    # Served by the (mind, created_at) index.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="proposals")
    by = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_index=False)
    proposed_by = models.CharField(max_length=254)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["memory", "by"], name="proposal_unique_pair"),
        ]
        indexes = [
            models.Index(fields=["mind", "-created_at"], name="proposal_mind_idx"),
            models.Index(fields=["by"], name="proposal_by_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.by_id} supersedes {self.memory_id}?"


class HygieneDismissal(models.Model):
    """A pair a person looked at and chose to keep both of: the hygiene checks stop
    flagging it (`kind`: contradiction or duplicate). `first` sorts before `second`."""

    class Kind(models.TextChoices):
        CONTRADICTION = "contradiction"
        DUPLICATE = "duplicate"

    # Served by the unique (mind, kind, first, second) index.
    mind = models.ForeignKey(
        "minds.Mind", on_delete=models.CASCADE, db_index=False, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    first = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    by = models.CharField(max_length=254)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["mind", "kind", "first", "second"], name="dismissal_unique_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.first_id} / {self.second_id} kept"


class HygieneCounts(models.Model):
    """What the hygiene checks last found in a mind (memories/hygiene/health.py): computed by
    the background worker, read by /memory/health and the overview, which so never pay for
    reading every memory. `through_event` is the mind's latest audit row the check saw."""

    mind = models.OneToOneField(
        "minds.Mind", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    contradictions = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    # Up to ATTENTION_IDS memory ids of each, for the attention items.
    contradiction_ids = models.JSONField(default=list, blank=True)
    duplicate_ids = models.JSONField(default=list, blank=True)
    # Every flagged memory's flags, for the review queue and the memory page
    # (memories/hygiene/flags.py): {memory id: {"content": digest, "flags": [[kind, other id,
    # reason], …]}}.
    flags = models.JSONField(default=dict, blank=True)
    through_event = models.BigIntegerField(default=0)
    checked_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.mind_id}: {self.contradictions} contradictions, {self.duplicates} groups"
