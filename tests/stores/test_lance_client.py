"""LanceDB imported without its REST namespace client, which memvault never calls."""

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_rest_client_is_not_imported_and_local_tables_work(tmp_path) -> None:
    out = _run(f"""
        import sys
        import numpy as np
        from stores.nodes import NodeIndex
        index = NodeIndex({str(tmp_path / "ix")!r}, "all-MiniLM-L6-v2", 384)
        print(index.count())
        loaded = sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client"))
        print(any(".api" in m for m in loaded), len(loaded))
    """)
    count, rest = out.splitlines()
    assert count == "0"
    api_loaded, n = rest.split()
    assert api_loaded == "False", "the REST API classes must not be imported by a local open"
    # The models lance_namespace names are imported one by one, not the ~160 of the package.
    assert int(n) < 150


def test_the_client_still_works_whole_when_something_asks_for_it() -> None:
    out = _run("""
        import stores  # installs the stand-ins
        import lance_namespace_urllib3_client as client
        print(client.ApiClient.__name__, client.models.JsonArrowSchema.__name__, client.__version__)
        from lance_namespace_urllib3_client.api import TableApi
        print(TableApi.__module__)
        try:
            client.no_such_name
        except AttributeError as exc:
            print("AttributeError", exc)
    """)
    lines = out.splitlines()
    assert lines[0].startswith("ApiClient JsonArrowSchema ")
    assert lines[1] == "lance_namespace_urllib3_client.api.table_api"
    assert lines[2].startswith("AttributeError") and "no_such_name" in lines[2]


def test_the_client_models_build_their_schemas_on_first_use(tmp_path) -> None:
    out = _run(f"""
        import stores  # installs the stand-ins
        from pydantic import BaseModel, ValidationError
        from stores.nodes import NodeIndex
        from lance_namespace import ListTablesResponse

        print(ListTablesResponse.__pydantic_complete__)
        index = NodeIndex({str(tmp_path / "ix")!r}, "all-MiniLM-L6-v2", 384)  # lists tables: builds it
        print(index.count())
        reply = ListTablesResponse(tables=["nodes"])
        print(ListTablesResponse.__pydantic_complete__, reply.tables)
        try:
            ListTablesResponse(tables=3)
        except ValidationError:
            print("ValidationError")

        class Ours(BaseModel):
            x: int

        print(Ours.__pydantic_complete__)
    """)
    assert out.splitlines() == ["False", "0", "True ['nodes']", "ValidationError", "True"]
