"""LanceDB imported without the `overrides` package's class-definition checks."""

import subprocess
import sys
import textwrap


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def test_lancedb_imports_without_the_checker_and_local_tables_work(tmp_path) -> None:
    lines = _run(f"""
        import sys
        from stores.nodes import NodeIndex
        import lancedb
        index = NodeIndex({str(tmp_path / "ix")!r}, "all-MiniLM-L6-v2", 384)
        print(index.count())
        print("overrides.overrides" in sys.modules, "overrides.signature" in sys.modules)
        print(lancedb.db.LanceDBConnection.open_table.__override__)
    """)
    assert lines[0] == "0"
    assert lines[1] == "False False", "the checking module of `overrides` must not be imported with lancedb"
    assert lines[2] == "True", "methods are still marked as overrides"


def test_the_package_still_works_whole() -> None:
    lines = _run("""
        import stores  # installs the stand-in
        from overrides import EnforceOverrides, final, override

        class Base(EnforceOverrides):
            def f(self) -> int:
                return 1

            @final
            def g(self) -> int:
                return 2

        class Marked(Base):
            @override
            def f(self) -> int:
                return 3

        print(Marked().f())
        for body in ("def f(self): return 4", "@override\\ndef g(self): return 5"):
            try:
                exec("class Bad(Base):\\n" + "\\n".join("    " + line for line in body.splitlines()))
            except TypeError as exc:
                print("TypeError", "f" if "def f" in body else "g")
        import overrides
        print(overrides.__VERSION__.count(".") >= 1)
    """)
    assert lines == ["3", "TypeError f", "TypeError g", "True"]
