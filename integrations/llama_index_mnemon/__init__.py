"""LlamaIndex faces for mnemon: a retriever and a long-term memory block for the agent `Memory`.

```python
from mnemon_core import Memory
from llama_index_mnemon import MnemonRetriever, MnemonMemoryBlock
```
Install with `pip install "mnemon-core[llamaindex]"`. Each class is a thin face over `Memory` / `AsyncMemory`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemon_core.lazy import lazy_exports

_EXPORTS = {
    "MnemonMemoryBlock": "memory",
    "MnemonRetriever": "retrievers",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from .memory import MnemonMemoryBlock
    from .retrievers import MnemonRetriever
