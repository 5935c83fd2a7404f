"""House rules that a reader of the code relies on (developers' guide): no private name used across
modules, no module of the package over 650 lines, experiments kept out of the package, no machine
path in the docs. Source text only: nothing is imported or run."""
import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CODE = [p for folder in ("thinkprobe", "scripts", "experiments") for p in sorted((REPO / folder).rglob("*.py"))]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_name_crosses_a_module():
    """`from x import _y` of the repository's own modules, `module._y` on an imported module and
    `obj._y` on anything but self / cls: a name shared between modules is public."""
    found = []
    for path in CODE:
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                own = node.level > 0 or (node.module or "").split(".")[0] == "thinkprobe"
                found += [f"{where}:{node.lineno}: imports {a.name}" for a in node.names if own and _private(a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_no_package_module_over_650_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "thinkprobe").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 650}
    assert not long, long


def test_the_package_never_imports_the_experiments():
    assert (REPO / "experiments" / "README.md").is_file()
    users = [str(p.relative_to(REPO)) for p in (REPO / "thinkprobe").rglob("*.py")
             if re.search(r"^\s*(from|import) experiments\b", p.read_text(encoding="utf-8"), re.M)]
    assert not users, users


def test_docs_name_no_machine_path():
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(REPO)}:{k}: {line.strip()[:100]}" for p in docs
             for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if re.search(r"/(work|tmp)/[A-Za-z]", line)]
    assert not found, "\n".join(found)


def test_the_two_results_pages_stay_short():
    """docs/accuracy.md and docs/findings.md hold the current results, under 250 lines each; the
    record of designs tried and earlier rounds goes to docs/notes/."""
    long = {name: n for name in ("accuracy.md", "findings.md")
            if (n := len((REPO / "docs" / name).read_text(encoding="utf-8").splitlines())) >= 250}
    assert not long, long
