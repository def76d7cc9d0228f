"""mnemon: graph memory for LLM agents. The whole public surface is listed in `__all__`.

Names load on first use, so `import mnemon_core` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: importing typing costs every CLI start ~5 ms

from .lazy import lazy_exports

__version__ = "0.1.0"  # the one version: pyproject.toml, `mnemon --version` and the MCP server read it

_EXPORTS = {
    "AsyncMemory": "async_memory",
    "Memory": "memory",
    "Settings": "config",
    "StoreCatalog": "stores",
    "Category": "models",
    "CausalCandidate": "models",
    "Edge": "models",
    "EdgeType": "models",
    "EdgesCreated": "models",
    "EntityMode": "models",
    "ForgetResult": "models",
    "GcResult": "models",
    "Insight": "models",
    "Intent": "models",
    "LinkResult": "models",
    "OplogEntry": "models",
    "RelatedHit": "models",
    "RememberResult": "models",
    "SearchHit": "models",
    "SemanticCandidate": "models",
    "StatusResult": "models",
    "DraftEdge": "draft",
    "DraftInsight": "draft",
    "DryRun": "draft",
    "ImportDraft": "draft",
    "ImportItem": "draft",
    "ImportResult": "draft",
    "BriefHit": "recall.results",
    "BriefRecallResult": "recall.results",
    "BudgetHit": "recall.results",
    "BudgetRecallResult": "recall.results",
    "RecallMeta": "recall.results",
    "Signals": "recall.results",
    "RecallHit": "recall.results",
    "RecallResult": "recall.results",
    "VerboseHit": "recall.results",
    "VerboseRecallResult": "recall.results",
    "EmbedStatus": "embed_ops",
    "EmbedderError": "errors",
    "MnemonError": "errors",
    "NotFoundError": "errors",
    "ReadOnlyError": "errors",
    "StoreError": "errors",
    "ValidationError": "errors",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from .config import Settings
    from .stores import StoreCatalog
    from .draft import DraftEdge, DraftInsight, DryRun, ImportDraft, ImportItem, ImportResult
    from .embed_ops import EmbedStatus
    from .recall.results import (
        BriefHit,
        BriefRecallResult,
        BudgetHit,
        BudgetRecallResult,
        RecallHit,
        RecallMeta,
        RecallResult,
        Signals,
        VerboseHit,
        VerboseRecallResult,
    )
    from .errors import EmbedderError, MnemonError, NotFoundError, ReadOnlyError, StoreError, ValidationError
    from .async_memory import AsyncMemory
    from .memory import Memory
    from .models import (
        Category,
        CausalCandidate,
        Edge,
        EdgesCreated,
        EdgeType,
        EntityMode,
        ForgetResult,
        GcResult,
        Insight,
        Intent,
        LinkResult,
        OplogEntry,
        RelatedHit,
        RememberResult,
        SearchHit,
        SemanticCandidate,
        StatusResult,
    )
