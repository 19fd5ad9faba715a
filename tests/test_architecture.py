"""The layout rules of docs/architecture.md, checked on the source: imports only point down the floors
(imports inside functions and under TYPE_CHECKING count), no import cycle between klue's top-level units
nor between any of its files, and no file outside `klue/tasks/` names three or more tasks."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

from klue import registry

SRC = Path(__file__).resolve().parents[1] / "src" / "klue"

# Top to bottom (docs/architecture.md, "Floors"); a unit may import its own floor or any floor below.
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"cli", "__main__"}),  # __main__.py: `python -m klue`, the CLI by another door
    frozenset({"leaderboard"}),
    frozenset({"benchmark", "reporting"}),
    frozenset({"families"}),
    frozenset({"training", "llm", "embed", "contamination", "pretraining", "baselines"}),
    frozenset({"registry", "protocols", "scoring", "predictions", "results", "validate"}),
    frozenset({"tasks"}),
    frozenset({"metrics", "models", "text"}),
    frozenset({"io", "errors"}),
)
FLOOR_OF = {unit: level for level, units in enumerate(FLOORS) for unit in units}


def unit_of(path: Path) -> str:
    """`klue/io/text.py` -> "io"; `klue/scoring.py` -> "scoring"."""
    parts = path.relative_to(SRC).with_suffix("").parts
    return parts[0]


def imported_units(path: Path) -> set[str]:
    """The klue units a source file imports, wherever the import statement stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ["klue", *path.relative_to(SRC).parent.parts]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
            elif node.module == "klue":
                names = [f"klue.{alias.name}" for alias in node.names]
            else:
                names = [node.module or ""]
        else:
            continue
        found |= {name.split(".")[1] for name in names if name.startswith("klue.")}
    return found


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts == ("__init__.py",):
            continue
        unit = unit_of(path)
        graph[unit] |= imported_units(path) - {unit}
    return graph


def test_every_unit_sits_on_a_floor() -> None:
    units = {unit_of(p) for p in SRC.rglob("*.py") if p.relative_to(SRC).parts != ("__init__.py",)}
    assert units <= set(FLOOR_OF), f"units without a floor: {sorted(units - set(FLOOR_OF))}"


def test_imports_only_point_down() -> None:
    upward = sorted(f"{unit} -> {target}" for unit, targets in unit_graph().items() for target in targets
                    if FLOOR_OF.get(target, 99) < FLOOR_OF[unit])
    assert not upward, f"imports pointing up a floor: {upward}"


def test_no_import_cycle_between_units() -> None:
    graph = unit_graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = 1
        for target in sorted(graph.get(unit, ())):
            assert state.get(target) != 1, f"import cycle: {' -> '.join([*trail, unit, target])}"
            if target not in state:
                visit(target, [*trail, unit])
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [])


def module_file(src: Path, module: str) -> Path | None:
    """The file of a dotted `klue...` module under the package directory `src` (a package: its __init__)."""
    base = src.parent.joinpath(*module.split("."))
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


def imported_files(src: Path, path: Path) -> set[Path]:
    """The klue files a source file imports, wherever the import statement stands. `from a import b` is the
    module a.b when there is one, else a; the packages above an imported module are not counted."""
    parts = path.relative_to(src.parent).with_suffix("").parts
    package = list(parts[:-1])  # a package's __init__ stands in its package, as a module does
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            names = [f"{module}.{a.name}" if module_file(src, f"{module}.{a.name}") else module for a in node.names]
        else:
            continue
        found |= {f for name in names if name.split(".")[0] == "klue" and (f := module_file(src, name)) is not None}
    return found - {path}


def file_cycles(src: Path) -> list[list[str]]:
    """Every set of files that import each other, directly or through others (Tarjan's strongly connected
    components of the file import graph), as paths relative to `src`."""
    graph = {path: imported_files(src, path) for path in sorted(src.rglob("*.py"))}
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    cycles: list[list[str]] = []

    def connect(path: Path) -> None:
        index[path] = low[path] = len(index)
        stack.append(path)
        for target in sorted(graph.get(path, ())):
            if target not in index:
                connect(target)
                low[path] = min(low[path], low[target])
            elif target in stack:
                low[path] = min(low[path], index[target])
        if low[path] == index[path]:
            component = [stack.pop()]
            while component[-1] != path:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(str(p.relative_to(src)) for p in component))

    for path in graph:
        if path not in index:
            connect(path)
    return cycles


def test_no_import_cycle_between_files() -> None:
    assert file_cycles(SRC) == [], "files that import each other (move what both need into one place)"


def test_a_file_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    src = tmp_path / "klue"
    (src / "sub").mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "sub" / "__init__.py").write_text("")
    (src / "sub" / "a.py").write_text("from klue.sub import b\n")
    (src / "sub" / "b.py").write_text("def late():\n    from . import c\n")
    (src / "sub" / "c.py").write_text("import klue.sub.a\n")
    (src / "d.py").write_text("from klue.sub.a import thing\n")
    assert file_cycles(src) == [["sub/a.py", "sub/b.py", "sub/c.py"]]
    (src / "sub" / "b.py").write_text("def late():\n    return 1\n")
    assert file_cycles(src) == []


def task_mentions(path: Path) -> set[str]:
    """The tasks a source file names: string literals equal to a task name or alias, `tasks.<name>`
    module paths, and the task's label (NER, WoS, ...) as a word in comments and docstrings."""
    by_word = {key: t.name for t in registry.all_tasks() for key in (t.name, *t.aliases)}
    labels = {t.label: t.name for t in registry.all_tasks()}
    found: set[str] = set()
    text = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING:
            try:
                value = ast.literal_eval(token.string)
            except (ValueError, SyntaxError):  # f-strings
                value = token.string
            if isinstance(value, str):
                if value in by_word:
                    found.add(by_word[value])
                found |= {labels[w] for w in re.findall(r"[A-Za-z]+", value) if w in labels}
                found |= {by_word[m] for m in re.findall(r"tasks\.(\w+)", value) if m in by_word}
        elif token.type == tokenize.COMMENT:
            found |= {labels[w] for w in re.findall(r"[A-Za-z]+", token.string) if w in labels}
        elif token.type == tokenize.NAME and token.string in by_word and token.string in labels.values():
            pass  # identifiers such as `re` (the module) or `ner_names` are not task references
    found |= {by_word[m] for m in re.findall(r"\btasks\.(\w+)", text) if m in by_word}
    return found


def test_no_file_outside_tasks_names_three_tasks() -> None:
    offenders = {}
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).parts[0] == "tasks":
            continue
        named = task_mentions(path)
        if len(named) >= 3:
            offenders[str(path.relative_to(SRC))] = sorted(named)
    assert not offenders, f"files outside tasks/ that name 3 or more tasks: {offenders}"


def test_scoring_and_the_registry_import_neither_torch_nor_sklearn() -> None:
    """`klue score` must start fast: the heavy parts of a task are lazy references."""
    import subprocess
    import sys

    code = ("import sys; from klue import registry, scoring, protocols; registry.all_tasks(); "
            "heavy = [m for m in ('torch', 'sklearn', 'transformers', 'pycrfsuite', 'kiwipiepy') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out
