"""What the zygote imports before it forks: ``MODULE``, what its ``__main__`` imports, and
later what its children reported (issue 6, *Performance*).

Separate from :mod:`crashlab._client._zygote.server` (the fork loop) because deciding and doing
the warm-up is one job; the guards it needs (flushed stdio, a single thread) live with it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys

__all__ = ["preload"]


def _main_imports(module: str) -> list[str]:
    """Modules the ``__main__`` of ``module`` imports at top level (without running it)."""
    names = [module + ".__main__", module]
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        if spec.submodule_search_locations is not None:  # a package: its __main__ is what runs
            continue
        try:
            with open(spec.origin, "rb") as fh:
                tree = ast.parse(fh.read(), spec.origin)
        except (OSError, SyntaxError, ValueError):
            return []
        found: list[str] = []
        package = name.rpartition(".")[0]
        for node in tree.body:  # top level only: never what hides under ``if __name__ == ...``
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parent = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{parent}.{base}" if base else parent
                if base:
                    found.append(base)
        return found
    return []


def preload(module: str, extra: list[str]) -> list[str]:
    """Import ``module`` (a package's ``__init__``, never a ``__main__``) and its deps."""
    importlib.import_module(module)
    loaded = [module]
    for name in _main_imports(module) + extra:
        if name == module + ".__main__" or name == "__main__":
            continue
        try:
            importlib.import_module(name)
            loaded.append(name)
        except ImportError:
            pass  # the child will import it (and fail) exactly as a plain spawn would
    return loaded


def _learn(reported: dict[str, str]) -> None:
    """Import what children imported, so that later forks need not (guarded: the zygote must
    stay single-threaded and must not have buffered output its children would inherit).

    Only a module the zygote resolves to the very file the child loaded: one found through the
    child's own working directory (first on its ``sys.path``) is left to the children."""
    for name in sorted(reported):  # parents before their submodules
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
            if spec is None or (reported[name] and spec.origin != reported[name]):
                continue
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that cannot be preloaded is imported by the child
            pass
    _flush_stdio()


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass


def _threads() -> int:
    """Threads of this process (native ones too, where the platform shows them)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()
