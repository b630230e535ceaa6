"""The project's import graph has no cycle: dependencies between its modules point one way, and
they follow the layers rlbase < odt, baselines < benchmarks < studies (a layer imports only those
below it; IQL, SAC and BC import nothing of ODT's trainer, rollout or config).

Built from the source with ``ast`` (nothing is imported), counting every import statement,
including those inside functions: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("rlbase", "odt", "baselines", "benchmarks", "studies")
HARNESS = ("rlbase", "odt", "baselines", "benchmarks")  # the studies import these, never the reverse
# (modules, what they must not import): a name covers the module and everything below it
LAYERS = (
    (("rlbase",), ("odt", "baselines", "benchmarks", "studies")),
    (("odt", "baselines"), ("benchmarks", "studies")),
    (("benchmarks",), ("studies",)),
    (("baselines.iql", "baselines.sac", "baselines.bc"), ("odt.train", "odt.rollout", "odt.config")),
)


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module a ``from ... import`` names (relative imports included)."""
    if node.level == 0:
        return node.module
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``module`` imports anywhere in its source."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node)
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:  # ``from pkg import submodule``
                    out.add(f"{target}.{alias.name}")
                elif target in modules:
                    out.add(target)
    out.discard(module)
    return out


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if root in state:
            continue
        path, stack = [root], [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "benchmarks.datasets.antmaze_forge" in graph["benchmarks.datasets.forge"]  # deferred, in make()
    assert "benchmarks.methods" in graph["benchmarks.job"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_among_the_projects_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_harness_never_imports_a_study():
    reverse = {f"{name} -> {target}" for name, targets in import_graph().items() if name.split(".")[0] in HARNESS
               for target in targets if target.split(".")[0] == "studies"}
    assert not reverse, "the harness imports studies: " + ", ".join(sorted(reverse))


def _within(module: str, names: tuple[str, ...]) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


def layer_violations(graph: dict[str, set[str]], modules: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """``a -> b`` for every import of a ``forbidden`` module by one of ``modules``."""
    return sorted(f"{name} -> {target}" for name, targets in graph.items() if _within(name, modules)
                  for target in targets if _within(target, forbidden))


@pytest.mark.parametrize("modules, forbidden", LAYERS, ids=lambda names: "+".join(names))
def test_the_layers_hold(modules, forbidden):
    graph = import_graph()
    assert any(_within(name, modules) for name in graph), f"no module of {modules}: is the rule stale?"
    bad = layer_violations(graph, modules, forbidden)
    assert not bad, "imports across the layers: " + ", ".join(bad)


@pytest.mark.parametrize("modules, forbidden", LAYERS, ids=lambda names: "+".join(names))
def test_the_layer_check_sees_a_planted_violation(modules, forbidden):
    graph = {f"{modules[-1]}.planted": {"rlbase.envs"},  # allowed: the base is below every layer
             f"{modules[0]}.sub.deep": {f"{forbidden[-1]}.inner"},  # the planted violation
             f"{forbidden[0]}x.outside": {f"{forbidden[0]}.inner"}}  # a name-prefix, not a submodule
    assert layer_violations(graph, modules, forbidden) == [f"{modules[0]}.sub.deep -> {forbidden[-1]}.inner"]
    assert layer_violations({f"{modules[0]}": {forbidden[0]}}, modules, forbidden) == [f"{modules[0]} -> {forbidden[0]}"]
    assert not layer_violations({"odt.trainer": {"benchmarks"}}, ("odt.train",), ("benchmarks",))
