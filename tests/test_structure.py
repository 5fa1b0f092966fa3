"""The house rules of the code base (docs/architecture.md), held by tests rather than by review:
modules depend one way (no import circle in python/ingot, type-only imports and imports inside
functions included; none among a crate's modules), no function runs over 100 lines, no module of
python/ingot over 800, python/ingot keeps at most 10 top-level modules, and the settings table in
examples/README.md is the one ingot.build.resolve.settings makes. These read the sources; they run no build."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

#: The fast tier (scripts/test --fast).
pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "ingot"
CRATES = ROOT / "crates"
LONGEST = 100


def python_modules() -> dict[str, Path]:
    """Every module of python/ingot by dotted name (packages as their ``__init__``)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        if relative.parts[1:2] in (("_source",), ("_launcher",)):
            continue
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        modules[".".join(parts)] = path
    return modules


def python_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ingot modules ``path`` imports anywhere in it: at module level, under
    ``TYPE_CHECKING``, inside functions."""
    found = set()
    name = next(module for module, file in modules.items() if file == path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {module for module in found if module in modules and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_python_modules_import_one_way():
    modules = python_modules()
    graph = {name: python_imports(path, modules) for name, path in modules.items()}
    assert cycles(graph) == []


def package_of(module: str) -> str:
    """The package a module belongs to, as a node of the graph between packages: a top-level
    module or package of ingot (``ingot.cli``, ``ingot.runtime``), and within ``ingot.build``
    its rooms (``ingot.build.resolve``) and its top-level modules."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] == ["build"] else parts[:2])


def test_packages_import_one_way():
    # (ingot.build and ingot.runtime, build's rooms among themselves: no circle between them
    # either, through whatever modules)
    modules = python_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        for imported in python_imports(path, modules):
            if package_of(imported) != package_of(name):
                graph.setdefault(package_of(name), set()).add(package_of(imported))
                coarse = (name.split(".")[:2], imported.split(".")[:2])
                if coarse[0] != coarse[1]:
                    graph.setdefault(".".join(coarse[0]), set()).add(".".join(coarse[1]))
    assert {"ingot.build.resolve", "ingot.build.archive", "ingot.runtime"} <= set(graph)
    assert cycles(graph) == []


#: The parts of ``ingot.build``, lowest first, as docs/architecture.md states them: a part imports
#: only parts of lower layers (and ingot's modules outside the build).
BUILD_LAYERS: tuple[tuple[str, ...], ...] = (
    ("ingot.build",),  # (its __init__: a docstring)
    ("ingot.build.analysis",),
    ("ingot.build.resolve",),
    ("ingot.build.interrupt",),
    ("ingot.build.sandbox", "ingot.build.progress"),
    ("ingot.build.archive",),
    ("ingot.build.stages",),
    ("ingot.build.pipeline",),
    ("ingot.build.report",),
    ("ingot.build.run",),
    ("ingot.build.under",),  # (a build under a runtime runs run.py's build_spec_file)
)
#: What may import the build from outside it.
BUILD_USERS = {"ingot.cli", "ingot.output", "ingot.inspection"}


def room_edges() -> set[tuple[str, str]]:
    """Each import from one part of ingot (:func:`package_of`) to another."""
    modules = python_modules()
    return {
        (package_of(name), package_of(imported))
        for name, path in modules.items()
        for imported in python_imports(path, modules)
        if package_of(imported) != package_of(name)
    }


def layer_violations(edges: set[tuple[str, str]]) -> list[str]:
    """The edges that break :data:`BUILD_LAYERS`: up or sideways between the build's parts, into
    the build from a module not in :data:`BUILD_USERS`, or from a part no layer names."""
    layer = {part: index for index, parts in enumerate(BUILD_LAYERS) for part in parts}
    found = []
    for source, target in sorted(edges):
        unnamed = [p for p in (source, target) if p.startswith("ingot.build") and p not in layer]
        if unnamed:
            found.append(f"{source} -> {target}: {unnamed[0]} is in no layer")
        elif target not in layer:
            continue  # (into ingot's modules outside the build)
        elif source not in layer and source not in BUILD_USERS:
            found.append(f"{source} -> {target}: imports the build from outside it")
        elif source in layer and layer[source] <= layer[target]:
            found.append(f"{source} -> {target}: imports a part of its own layer or above")
    return found


def test_the_builds_rooms_import_in_the_order_the_architecture_page_states():
    edges = room_edges()
    assert ("ingot.build.stages", "ingot.build.archive") in edges  # (the scan finds edges)
    assert layer_violations(edges) == []
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "analysis imports no other room; resolve imports analysis" in " ".join(page.split())


def test_the_layer_check_finds_an_edge_that_goes_up():
    assert layer_violations({("ingot.build.archive", "ingot.build.stages")}) != []
    assert layer_violations({("ingot.build.resolve", "ingot.build.resolve2")}) != []
    assert layer_violations({("ingot.runtime", "ingot.build.resolve")}) != []
    assert layer_violations({("ingot.build.stages", "ingot.build.archive")}) == []


def test_the_circle_finder_finds_a_circle():
    # (so that the test above can fail)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def rust_modules(crate: Path) -> dict[str, Path]:
    """A crate's modules below its root (lib.rs/main.rs re-export them: not a node)."""
    return {
        path.stem: path
        for path in sorted((crate / "src").glob("*.rs"))
        if path.stem not in ("lib", "main")
    }


def rust_uses(path: Path, modules: dict[str, Path]) -> set[str]:
    """The sibling modules ``path``'s code names (``crate::m``, ``super::m``, ``use crate::{m,
    ...}``); comments (doc links) are not dependencies."""
    text = re.sub(r"//.*", "", path.read_text())
    names = set(re.findall(r"\b(?:crate|super)::([a-z_][a-z0-9_]*)", text))
    for group in re.findall(r"\b(?:crate|super)::\{([^}]*)\}", text):
        names |= {item.strip().split("::")[0] for item in group.split(",")}
    return {name for name in names if name in modules and name != path.stem}


@pytest.mark.parametrize("crate", sorted(path.name for path in CRATES.iterdir() if path.is_dir()))
def test_a_crates_modules_depend_one_way(crate):
    modules = rust_modules(CRATES / crate)
    graph = {name: rust_uses(path, modules) for name, path in modules.items()}
    assert cycles(graph) == []


def python_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_bytes())
    return [
        (f"{path.name}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def rust_functions(path: Path) -> list[tuple[str, int]]:
    """Each ``fn`` of a Rust file with its length in lines, from its signature to the line of
    its closing brace (found by counting braces outside strings, chars and comments)."""
    lines = path.read_text().splitlines()
    found = []
    for number, line in enumerate(lines):
        match = re.match(
            r"\s*(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+|unsafe\s+|extern \"C\"\s+)*fn\s+(\w+)", line
        )
        if not match:
            continue
        depth, opened = 0, False
        for end in range(number, len(lines)):
            code = re.sub(r'//.*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'', "", lines[end])
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            if not opened and code.rstrip().endswith(";"):
                break  # a declaration without a body
        found.append((f"{path.name}:{number + 1} {match.group(1)}", end - number + 1))
    return found


def test_no_function_runs_over_100_lines():
    functions = [
        *(
            item
            for path in sorted(PACKAGE.rglob("*.py"))
            if "_source" not in path.parts
            for item in python_functions(path)
        ),
        *(item for path in sorted(CRATES.rglob("src/**/*.rs")) for item in rust_functions(path)),
    ]
    assert len(functions) > 500  # (the scan sees the code)
    assert [(name, length) for name, length in functions if length > LONGEST] == []


def test_the_rust_scan_measures_a_function(tmp_path):
    source = tmp_path / "x.rs"
    source.write_text("fn a() {\n    let s = \"}\";\n    if x { y('{') }\n}\nfn b();\n")
    assert [length for _, length in rust_functions(source)] == [4, 1]


UNSAFE_FN = re.compile(r'\s*(pub(\([^)]*\))?\s+)?unsafe\s+(extern\s+"C"\s+)?fn\s+\w+')


def unsafe_functions_without_safety(path: Path) -> list[str]:
    """The ``unsafe fn``s of the Rust file ``path`` whose doc comment has no ``# Safety``
    section (what a caller must ensure)."""
    lines = path.read_text().splitlines()
    found = []
    for number, line in enumerate(lines):
        if not UNSAFE_FN.match(line):
            continue
        above, doc = number - 1, []
        while above >= 0 and lines[above].strip().startswith(("///", "#[")):
            doc.append(lines[above].strip())
            above -= 1
        if "/// # Safety" not in doc:
            found.append(f"{path.name}:{number + 1}")
    return found


def test_every_unsafe_function_says_what_its_caller_must_ensure():
    # Issue 54 (clippy's missing_safety_doc looks at public functions only).
    paths = sorted(CRATES.rglob("src/**/*.rs"))
    assert sum(path.read_text().count("unsafe fn") for path in paths) > 10  # (the scan sees them)
    assert [item for path in paths for item in unsafe_functions_without_safety(path)] == []


def test_the_safety_scan_finds_a_function_without_its_section(tmp_path):
    source = tmp_path / "x.rs"
    source.write_text(
        "/// Does x.\nunsafe fn a() {}\n/// Does y.\n///\n/// # Safety\n///\n/// Holds the GIL.\n"
        '#[inline]\npub(crate) unsafe extern "C" fn b() {}\ntype F = unsafe extern "C" fn();\n'
        "    unsafe fn c() {}\n"
    )
    assert unsafe_functions_without_safety(source) == ["x.rs:2", "x.rs:11"]


def test_the_package_keeps_at_most_ten_top_level_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_no_module_of_the_package_runs_over_800_lines():
    # Issue 54: one job per file. (The generated import lists are examples', not the package's.)
    long = {
        path.relative_to(PACKAGE).as_posix(): count
        for path in PACKAGE.rglob("*.py")
        if "_source" not in path.relative_to(PACKAGE).parts
        and (count := len(path.read_text().splitlines())) > 800
    }
    assert long == {}


def test_the_readme_lists_the_settings_the_table_defines():
    from ingot.build.resolve.settings import markdown_table

    readme = (ROOT / "examples" / "README.md").read_text()
    begin, end = (
        "<!-- settings: made by ingot.build.resolve.settings.markdown_table -->\n",
        "<!-- /settings -->",
    )
    assert begin in readme and end in readme
    shown = readme.split(begin, 1)[1].split(end, 1)[0]
    assert shown == markdown_table(), (
        "run: python -c 'from ingot.build.resolve.settings import markdown_table as t; print(t())'"
    )


def test_the_build_command_offers_every_settings_options(capsys):
    from dataclasses import fields

    from ingot import cli
    from ingot.build.resolve.settings import Request, Settings

    with pytest.raises(SystemExit) as exit:
        cli.main(["build", "--help"])
    assert exit.value.code == 0
    shown = capsys.readouterr().out
    for kind in (Settings, Request):
        for field in fields(kind):
            option = field.metadata.get("option")
            for flag in option.flags if option else ():
                assert flag in shown, flag
    assert "--no-fast-exit" in shown and "--no-compress" in shown


# --- the environment ------------------------------------------------------------------------------

#: A read of one variable, by name: Python (``os.environ.get("X")``, ``os.environ["X"]``,
#: ``os.getenv("X")``, the build's snapshot ``environment.get("X")``) and Rust
#: (``std::env::var("X")``, ``var_os(NAME)`` of a constant, ``env!("X")`` at compile time, the
#: cache root's ``absolute("X")``).
_NAMED_READS = (
    r'os\.environ\.get\(\s*"([A-Z_][A-Z0-9_]*)"',
    r'os\.environ\[\s*"([A-Z_][A-Z0-9_]*)"\s*\]',
    r'os\.getenv\(\s*"([A-Z_][A-Z0-9_]*)"',
    r'\b(?:self\.variables|environment)\.get\(\s*"([A-Z_][A-Z0-9_]*)"',
    r'\benv::var(?:_os)?\(\s*"([A-Z_][A-Z0-9_]*)"',
    r"\benv::var(?:_os)?\(\s*(?:\w+::)*([A-Z_][A-Z0-9_]*)\s*\)",
    r'\benv!\(\s*"([A-Z_][A-Z0-9_]*)"',
    r'\b(?:absolute|variable)\(\s*"?([A-Z_][A-Z0-9_]*)"?\s*\)',
)
#: Variables cargo sets for a crate's build: not ingot's choice.
_CARGO_SETS = re.compile(r"CARGO_PKG_\w+|CARGO_MANIFEST_DIR|OUT_DIR")


def environment_reads() -> set[tuple[str, str]]:
    """(variable, file) for each variable the code reads by name: python/ingot, the crates'
    sources and build scripts, the build backend. A Rust constant read through
    ``var(NAME)`` is resolved to its value, as is the list of CA variables castore.rs reads."""
    files = [
        *(p for p in PACKAGE.rglob("*.py") if not {"_source", "_launcher"} & set(p.parts)),
        *CRATES.rglob("src/**/*.rs"),
        *CRATES.glob("*/build.rs"),
        *(ROOT / "tools").rglob("*.py"),
    ]
    constants: dict[str, str] = {}
    for path in files:
        if path.suffix == ".rs":
            text = path.read_text()
            constants.update(
                re.findall(r'const\s+([A-Z_][A-Z0-9_]*)\s*:\s*&str\s*=\s*"([^"]+)"', text)
            )
            for names in re.findall(r"const VARIABLES: \[&str; \d+\] = \[([^\]]*)\]", text):
                constants.update((f"{name}", name) for name in re.findall(r'"([^"]+)"', names))
    found = set()
    for path in files:
        text = path.read_text()
        for pattern in _NAMED_READS:
            for name in re.findall(pattern, text):
                name = constants.get(name, name)
                if not _CARGO_SETS.fullmatch(name):
                    found.add((name, path.relative_to(ROOT).as_posix()))
        if path.name == "castore.rs" and "VARIABLES" in text:
            found |= {(name, "castore.rs") for name in constants if name.startswith("SSL_")}
    return found


def covered(name: str, table: list[str]) -> bool:
    """Whether the table's names (``X``, ``X*``, ``A, B, C*``) cover variable ``name``."""
    patterns = [part.strip() for entry in table for part in entry.split(",")]
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def test_every_environment_variable_the_code_reads_is_in_the_table():
    from ingot.build.resolve.environment import VARIABLES

    reads = environment_reads()
    names = {name for name, _ in reads}
    # (the scan sees the reads: the importer's, the launcher's, the build's, compile time's)
    assert {"INGOT_CACHE_DIR", "INGOT_PARENT", "INGOT_LAUNCHER", "PYO3_PYTHON"} <= names, names
    table = [variable.name for variable in VARIABLES]
    assert sorted((name, where) for name, where in reads if not covered(name, table)) == []


def test_the_table_check_catches_an_unlisted_variable(tmp_path):
    # (so that the test above can fail)
    assert not covered("INGOT_SOMETHING_NEW", ["INGOT_CACHE_DIR", "PIP_*"])
    assert covered("PIP_INDEX_URL", ["INGOT_CACHE_DIR", "PIP_*"])
    assert covered("LDFLAGS", ["CC, CXX, LDFLAGS"])


#: What reads the environment in Python: a variable, the whole of it, or a value derived from it
#: (the home directory, the cache root).
_PYTHON_ENVIRONMENT = re.compile(
    r"\bos\.environ\b|\bos\.getenv\b|\bPath\.home\(|\bexpanduser\(|\bcachedir\.(?:build_)?root\("
    r"|\bsnapshot\(\)"
)


def test_the_build_reads_the_environment_only_while_resolving():
    # Issue 38: after resolution, a build's stages read the snapshot its spec carries.
    build = PACKAGE / "build"
    readers = sorted(
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{number}: {line.strip()}"
        for path in build.rglob("*.py")
        if "resolve" not in path.relative_to(build).parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _PYTHON_ENVIRONMENT.search(line.split("#")[0])
        and not line.lstrip().startswith(('"', "'", "``", "#"))
    )
    # PackOptions.here, for the packer's API callers (ingot pack, tests): the environment then.
    allowed = {"ingot/build/archive/options.py"}
    assert [r for r in readers if r.split(":")[0] not in allowed] == []


#: Children of a build started without ``env=`` (each inherits this process's environment), and
#: why that is the build's environment all the same.
_INHERITING_CHILDREN = {
    # the pools' workers: ``python -I`` (no PYTHON* variable read), computing from files alone
    "ingot/build/archive/prefetch.py",
}


def children_without_environment(paths) -> list[str]:
    """The subprocess calls in ``paths`` that start a child without ``env=``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "subprocess"
                and node.func.attr in ("run", "Popen", "call", "check_call", "check_output")
                and not any(keyword.arg == "env" for keyword in node.keywords)
            ):
                where = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path
                found.append(f"{where.as_posix()}:{node.lineno}")
    return found


def test_the_builds_children_get_the_environment_resolution_took(tmp_path):
    # pip included: what it installs is keyed on the snapshot's pip configuration, so it runs
    # in the snapshot, not in whatever the process's environment became.
    build = PACKAGE / "build"
    paths = [path for path in build.rglob("*.py") if "resolve" not in path.parts]
    found = children_without_environment(paths)
    assert [where for where in found if where.split(":")[0] not in _INHERITING_CHILDREN] == []
    sample = tmp_path / "sample.py"
    sample.write_text("import subprocess\nsubprocess.run(['pip'], env={})\nsubprocess.run(['x'])\n")
    assert len(children_without_environment([sample])) == 1


def test_the_environment_page_lists_the_table():
    from ingot.build.resolve.environment import markdown_table

    page = (ROOT / "docs" / "environment.md").read_text()
    begin = "<!-- environment: made by ingot.build.resolve.environment.markdown_table -->\n"
    end = "<!-- /environment -->"
    assert begin in page and end in page
    assert page.split(begin, 1)[1].split(end, 1)[0] == markdown_table(), (
        "run: python -c 'from ingot.build.resolve.environment import markdown_table as t; "
        'print(t(), end="")\' and paste it into docs/environment.md'
    )


def test_python_decodes_no_file_format():
    # Issue 38: "formats are defined once, in Rust": the archive (header, trailer, sizes) and ELF
    # headers are read by ingot._ingot (archive_info, elf_class, the finder's methods); no
    # Python module of ingot takes bytes apart.
    decoding = re.compile(
        r"\bint\.from_bytes\(|\bstruct\.(?:unpack|unpack_from|calcsize)\b|\bseek\(-"
    )
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not {"_source", "_launcher"} & set(path.parts)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if decoding.search(line)
    ]
    assert found == []


def test_the_readme_opens_with_a_short_quick_start_under_the_projects_own_name():
    # Issue 40: `pip install ingot` got another project's package; the distribution is pyingot.
    import tomllib

    from ingot.runtime.wheel import distribution

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == "pyingot"
    assert distribution("3.11") == "pyingot-runtime-cp311"
    readme = (ROOT / "README.md").read_text()
    sections = readme.split("\n## ")
    assert sections[1].startswith("Quick start\n"), sections[1][:40]
    # Its commands: a user's (install, build, run) and, until the wheels are published, a
    # clone's (tests/test_quickstart.py runs both on a fresh Debian 12 root).
    blocks = [part.split("```", 1)[0] for part in sections[1].split("```sh\n")[1:]]
    assert sum(len(block.splitlines()) for block in blocks) <= 15
    for step in ("pip install pyingot", "ingot build", "dist/"):
        assert step in blocks[0], step
    assert "ingot runtime build" in blocks[1]


def test_the_crates_readme_names_every_module_of_every_crate():
    readme = (CRATES / "README.md").read_text()
    sections = readme.split("\n## ")[1:]
    for crate in sorted(path.parent.parent.name for path in CRATES.glob("*/src/lib.rs")):
        section = next((s for s in sections if s.startswith(f"`{crate}`")), None)
        assert section is not None, f"crates/README.md has no section on {crate}"
        modules = sorted(path.name for path in (CRATES / crate / "src").iterdir())
        missing = [name for name in modules if f"`{name}`" not in section]
        assert missing == [], f"crates/README.md says nothing of {crate}'s {missing}"
