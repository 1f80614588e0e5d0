"""RunOptions: typed stage and engine names and a datetime `since`, validated by Prefect from the
JSON strings a deployment or the UI sends, with the choices in the parameter schema."""

from datetime import datetime, timezone
from pathlib import Path

import pytest
from prefect.exceptions import ParameterTypeError
from prefect.utilities.callables import parameter_schema

from flows.nightly import RunOptions, nightly
from tasks.pipeline import STAGES


def test_a_real_flow_run_validates_options_from_strings(home: Path, prefect) -> None:
    report = nightly(options={"home": str(home), "only": ["changelog", "ingest"], "engine": "none",
                              "since": "2026-05-01", "paths": [], "dry_run": False})
    assert report["status"] == "completed"
    assert list(report["stages"]) == ["ingest", "changelog"]  # pipeline order, not the order given
    with pytest.raises(ParameterTypeError, match=r"options.only.0: Input should be .ingest., .chunk."):
        nightly(options={"home": str(home), "only": ["bogus"]})


def test_since_is_a_utc_datetime() -> None:
    assert RunOptions(since="2026-05-01").since == datetime(2026, 5, 1, tzinfo=timezone.utc)
    assert RunOptions(since="2026-05-01T08:00+02:00").since.utcoffset().total_seconds() == 7200
    with pytest.raises(ValueError):
        RunOptions(since="last tuesday")


def test_the_parameter_schema_offers_the_choices() -> None:
    schema = parameter_schema(nightly).model_dump()
    options = schema["definitions"]["RunOptions"]["properties"]
    only = next(s for s in options["only"]["anyOf"] if s.get("type") == "array")
    assert only["items"]["enum"] == list(STAGES)
    assert next(s for s in options["from_stage"]["anyOf"] if "enum" in s)["enum"] == list(STAGES)
    assert next(s for s in options["engine"]["anyOf"] if "enum" in s)["enum"] == ["auto", "mlx", "openai", "none"]
    assert next(s for s in options["since"]["anyOf"] if s.get("type") == "string")["format"] == "date-time"
