"""Package namespaces whose names load on first use (PEP 562), so importing a package stays cheap:
the CLI starts on every agent turn, and a face must not pull its framework in before it is used."""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: the package import is on the CLI's start-up path (typing costs ~5 ms,
if TYPE_CHECKING:  # collections.abc ~1 ms)
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for `package`, whose `exports` map a name to the submodule
    (relative to the package) that defines it. A loaded name is cached in the package's `namespace`."""
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module  # here: importlib costs the package import ~3 ms

        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return names

    return names, __getattr__, __dir__
