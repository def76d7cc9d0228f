"""LlamaIndex faces for mnemon: a retriever and a long-term memory block for the agent `Memory`.

```python
from mnemon_core import Memory
from llama_index_mnemon import MnemonRetriever, MnemonMemoryBlock
```
Install with `pip install "mnemon[llamaindex]"`. Each class is a thin face over `Memory` / `AsyncMemory`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "MnemonMemoryBlock": "memory",
    "MnemonRetriever": "retrievers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'llama_index_mnemon' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from .memory import MnemonMemoryBlock
    from .retrievers import MnemonRetriever
