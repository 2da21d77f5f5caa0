"""Reading supersedes: the proposals that wait for a person. The writes (memory_supersede,
supersede_many, proposal_reject) are memories.services', beside the other writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from memories.fields import iso, memory_to_dict
from memories.models import SupersedeProposal
from minds.models import Mind


@dataclass(frozen=True)
class ProposalPage:
    proposals: list[SupersedeProposal]
    total: int


def proposals_waiting(*, mind: Mind) -> QuerySet[SupersedeProposal]:
    """The mind's proposals, newest first, with both memories read in the same query."""
    return (
        SupersedeProposal.objects.filter(mind=mind)
        .select_related("memory", "by")
        .order_by("-created_at", "-id")
    )


def proposal_list(*, mind: Mind, limit: int = 100, offset: int = 0) -> ProposalPage:
    waiting = proposals_waiting(mind=mind)
    return ProposalPage(list(waiting[offset : offset + limit]), waiting.count())


def proposal_to_dict(proposal: SupersedeProposal) -> dict[str, Any]:
    """A proposal as every face shows it: the verified memory, the one proposed to replace
    it, who proposed it and when."""
    return {
        "id": proposal.pk,
        "memory": memory_to_dict(proposal.memory),
        "by": memory_to_dict(proposal.by),
        "proposed_by": proposal.proposed_by,
        "created_at": iso(proposal.created_at),
    }
