"""How runtimes are built: the libraries (:mod:`ingot.runtime.recipes.libraries`), then CPython
(:mod:`ingot.runtime.recipes.cpython`), with the runtime's toolchain. Each part has a
fingerprint of what it does (:func:`fingerprint`): the code of its module without comments,
docstrings or layout, so that tidying a recipe rebuilds nothing, and a change to CPython's
recipe does not rebuild the libraries.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from ingot.runtime.recipes.cpython import (
    BUILD_TOOLS,
    KEPT_TOOLS,
    PGO_GENERATE,
    PGO_USE,
    PROFILE_FILE,
    PROFILE_TASK,
    PROFILED_FUNCTIONS,
    PYTHON_PATTERNS,
    TOOL_LDFLAGS_VARIABLE,
    build_python,
    patch_python,
    python_configure_arguments,
    python_version_of,
    security_patches,
)
from ingot.runtime.recipes.libraries import (
    CFLAGS,
    LIBRARIES,
    PROFILE_RUNTIME,
    PROFILE_RUNTIME_FILE,
    PROFILE_RUNTIME_MEMBERS,
    SCRIPT_LIBRARIES,
    TOOLS,
    Recipe,
    cross_options,
    llvm_version_of,
)

__all__ = [
    "BUILD_TOOLS",
    "CFLAGS",
    "KEPT_TOOLS",
    "LIBRARIES",
    "PGO_GENERATE",
    "PGO_USE",
    "PROFILED_FUNCTIONS",
    "PROFILE_FILE",
    "PROFILE_RUNTIME",
    "PROFILE_RUNTIME_FILE",
    "PROFILE_RUNTIME_MEMBERS",
    "PROFILE_TASK",
    "PYTHON_PATTERNS",
    "SCRIPT_LIBRARIES",
    "TOOLS",
    "TOOL_LDFLAGS_VARIABLE",
    "Recipe",
    "build_python",
    "code_of",
    "cross_options",
    "fingerprint",
    "llvm_version_of",
    "patch_python",
    "python_configure_arguments",
    "python_version_of",
    "security_patches",
]


def code_of(module: Path) -> str:
    """What a module does: its syntax tree without docstrings (comments and layout are not in
    it), dumped. Two files that differ only in comments, docstrings, blank lines or wrapping
    give the same text."""
    tree = ast.parse(module.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def fingerprint(*modules: Path) -> str:
    """The hash of what ``modules`` do (:func:`code_of`), 16 hex digits."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(code_of(module).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
