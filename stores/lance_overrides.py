"""Import LanceDB without running the `overrides` package's checks at class definition.

On Python < 3.12 lancedb decorates ~200 methods with ``overrides.override``, which checks each
one when its class is defined: it reads the calling frame's bytecode with `dis` to find the
base classes, then compares signatures. That is a quarter of lancedb's import time, paid by
every cold recall, for a check that only guards lancedb's own source. On 3.12 lancedb itself
uses ``typing.override`` instead, which checks nothing and only marks the method.

`skip_override_checks` puts a stand-in `overrides` module in `sys.modules` before lancedb is
imported, with lancedb's 3.12 behaviour: ``override`` (and its old name ``overrides``) sets
``__override__ = True`` on the method and returns it, the mark `EnforceOverrides` reads;
``final`` is ``typing.final``, as the real package's own on 3.11+. Every other name —
`EnforceOverrides`, submodules — comes from the real package (its real `__path__`), and a name
its ``__init__`` alone defines runs that ``__init__``, so nothing is missing. Nothing changes
when the package is absent or already imported.
"""

import sys
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from stores.lance_client import stand_in

PACKAGE = "overrides"
_F = TypeVar("_F", bound=Callable[..., Any])


def override(method: _F | None = None, *, check_signature: bool = True,
             check_at_runtime: bool = False) -> Any:
    """Mark ``method`` as an override (``@override`` or ``@override(...)``), checking nothing."""
    if method is None:
        return lambda f: override(f)
    setattr(method, "__override__", True)
    return method


def skip_override_checks() -> None:
    """Install the stand-in unless `overrides` is already imported (or not installed)."""
    if PACKAGE in sys.modules:
        return
    try:
        module = stand_in(PACKAGE)
    except (ImportError, OSError, ValueError):
        sys.modules.pop(PACKAGE, None)
        return
    if module is not None:
        module.override = module.overrides = override  # type: ignore[attr-defined]
        module.final = typing.final  # type: ignore[attr-defined]
