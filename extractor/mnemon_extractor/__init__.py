"""mnemon_extractor: what an LLM adds to mnemon's deterministic engine (extra `mnemon-core[openai]`).

- `Extractor(...).extract(path) -> ImportDraft`: chat export → memory draft (schema v1).
- `LinkJudge(memory, ...).judge(result_or_id) -> JudgeResult`: decides which candidates of a new insight
  to link, with which type, and links them.

Both talk to any OpenAI-compatible server (`base_url`, `api_key`, `model`, or `MNEMON_LLM_*`). The `openai`
package is imported when a model is first called, so readers and models load without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemon_core.lazy import lazy_exports

_EXPORTS = {
    "ChunkFailure": "extract",
    "Extraction": "extract",
    "ExtractionReport": "extract",
    "Extractor": "extract",
    "nothing_because": "extract",
    "write_draft": "extract",
    "JudgeResult": "judge",
    "LinkJudge": "judge",
    "nothing_judged": "judge",
    "LLMConfig": "llm",
    "Conversation": "readers",
    "Message": "readers",
    "Transcript": "readers",
    "read_export": "readers",
    "Chunk": "chunking",
    "chunk_conversations": "chunking",
    "estimate_tokens": "chunking",
    "ExtractionError": "errors",
    "ExtractorError": "errors",
    "LLMError": "errors",
    "UnknownFormatError": "errors",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from .chunking import Chunk, chunk_conversations, estimate_tokens
    from .errors import ExtractionError, ExtractorError, LLMError, UnknownFormatError
    from .extract import ChunkFailure, Extraction, ExtractionReport, Extractor, nothing_because, write_draft
    from .judge import JudgeResult, LinkJudge, nothing_judged
    from .llm import LLMConfig
    from .readers import Conversation, Message, Transcript, read_export
