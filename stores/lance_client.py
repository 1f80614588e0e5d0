"""Import LanceDB without paying for its REST namespace client.

`import lancedb` imports `lance_namespace`, which imports the generated OpenAPI client
`lance_namespace_urllib3_client` whole: about 160 pydantic models and five REST API classes,
roughly half of lancedb's import time (0.65 of 1.4 CPU s here) and ~15 MB. memvault only opens
local tables, so the client is never called; but lancedb and lance_namespace import names from
it at module level, so it cannot simply be left out.

`defer_rest_client` puts two stand-in modules in `sys.modules` before lancedb is imported: the
package `lance_namespace_urllib3_client` and its `models` package, with their real `__path__`
so that submodules import normally. A name asked of `models` imports only the one submodule
that defines it (read from the package's own `__init__.py`); any other name, on either
stand-in, runs the real `__init__` first, so the client works whole if something does use it.
Nothing changes when the package is absent or already imported.

The models lance_namespace and lancedb do name (~140, through their dependencies) are still
defined at import, but with pydantic's ``defer_build``: each builds its validator and
serializer on first use (lancedb's local tables use a few, e.g. `ListTablesResponse`), not
at import, which saves another ~0.08 CPU s of every cold recall. ``defer_build`` changes when
a schema is built, never what it is.
"""

import importlib
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any

CLIENT = "lance_namespace_urllib3_client"
_FROM_IMPORT = re.compile(r"^from ([\w.]+) import (\w+)\s*$", re.MULTILINE)


class _Deferred(types.ModuleType):
    """A package whose `__init__` runs only when a name it alone defines is asked for."""

    _defines: dict[str, str] | None = None  # name -> submodule, read from __init__.py on first use
    _loaded = False

    def __getattr__(self, name: str) -> Any:
        if self._defines is None:
            self._defines = {n: m for m, n in _FROM_IMPORT.findall(Path(str(self.__file__)).read_text("utf-8"))}
        where = self._defines.get(name)
        if where is not None:
            value = getattr(importlib.import_module(where), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{self.__name__}.{name}") is not None:
            value = importlib.import_module(f"{self.__name__}.{name}")
        elif not self._loaded:
            self._loaded = True
            assert self.__spec__ is not None and self.__spec__.loader is not None
            self.__spec__.loader.exec_module(self)  # the real __init__, into this module
            return getattr(self, name)
        else:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        setattr(self, name, value)
        return value


def stand_in(name: str) -> types.ModuleType | None:
    """A `_Deferred` stand-in for the package ``name`` in ``sys.modules``, or None if the
    package is not installed."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return None
    module = _Deferred(name)
    module.__spec__ = spec
    module.__loader__ = spec.loader
    module.__file__ = spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    sys.modules[name] = module
    return module


def _defer_schema_builds() -> None:
    """Make pydantic defer building the schema of every model the client's modules define."""
    from pydantic._internal._model_construction import ModelMetaclass

    real_new = ModelMetaclass.__new__
    if getattr(real_new, "_defers_client_builds", False):
        return

    def new(mcs: type, cls_name: str, bases: tuple[type, ...], namespace: dict[str, Any], *args: Any,
            **kwargs: Any) -> type:
        if str(namespace.get("__module__", "")).startswith(f"{CLIENT}."):
            namespace["model_config"] = {**(namespace.get("model_config") or {}), "defer_build": True}
        return real_new(mcs, cls_name, bases, namespace, *args, **kwargs)

    setattr(new, "_defers_client_builds", True)
    setattr(ModelMetaclass, "__new__", staticmethod(new))


def defer_rest_client() -> None:
    """Install the stand-ins unless the client is already imported (or not installed)."""
    if CLIENT in sys.modules:
        return
    _defer_schema_builds()
    try:
        top = stand_in(CLIENT)
        if top is not None:
            models = stand_in(f"{CLIENT}.models")
            if models is not None:
                setattr(top, "models", models)
    except (ImportError, OSError, ValueError):
        for name in (CLIENT, f"{CLIENT}.models"):
            sys.modules.pop(name, None)
