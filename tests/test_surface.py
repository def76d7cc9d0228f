"""The public surfaces, pinned by their exact lists: what `import mnemon_core` offers (every name resolves, lazily),
and the kit the framework integrations import (`mnemon_core.faces.kit`). A name added or dropped fails here, so
the change is a decision, not an accident."""

from __future__ import annotations

import mnemon_core
from mnemon_core.faces import kit

PUBLIC = [
    "AsyncMemory", "BriefHit", "BriefRecallResult", "BudgetHit", "BudgetRecallResult", "Category", "CausalCandidate",
    "DraftEdge", "DraftInsight", "DryRun", "Edge", "EdgeType", "EdgesCreated", "EmbedStatus", "EmbedderError",
    "EntityMode", "ForgetResult", "GcResult", "ImportDraft", "ImportItem", "ImportResult", "Insight", "Intent",
    "LinkResult", "Memory", "MnemonError", "NotFoundError", "OplogEntry", "ReadOnlyError", "RecallHit", "RecallMeta",
    "RecallResult", "RelatedHit", "RememberResult", "SearchHit", "SemanticCandidate", "Settings", "Signals",
    "StatusResult", "StoreCatalog", "StoreError", "ValidationError", "VerboseHit", "VerboseRecallResult",
]

KIT = ["METADATA_KEYS", "chunks", "hit_metadata", "hit_text", "open_memory", "recall_hits"]


def test_the_package_surface_is_pinned() -> None:
    assert mnemon_core.__all__ == PUBLIC
    for name in PUBLIC:
        assert getattr(mnemon_core, name) is not None


def test_the_integrations_kit_is_pinned() -> None:
    assert kit.__all__ == KIT
    for name in KIT:
        assert getattr(kit, name) is not None
