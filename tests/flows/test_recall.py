"""The `recall` Prefect flow: validated parameters, the same result as the other doors, an artifact."""

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey
from prefect.exceptions import ParameterTypeError

from flows.recall import ARTIFACT_KEY, RecallOptions, recall, recall_markdown


def test_recall_flow_publishes_a_markdown_artifact(doors_home, prefect) -> None:
    options = RecallOptions(query="what is the default tide station of tidepool", home=str(doors_home), max_nodes=4)
    state = recall(options, return_state=True)
    result = state.result()
    assert result["block"].startswith("<memory-recall>") and "9414750" in result["block"]
    assert 0 < len(result["hits"]) <= 4
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[ARTIFACT_KEY]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    assert len(artifacts) == 1 and artifacts[0].type == "markdown"
    body = artifacts[0].data
    assert "9414750" in body and "| # | score | path | cite |" in body and result["hits"][0]["path"] in body


def test_recall_flow_rejects_invalid_parameters(doors_home, prefect) -> None:
    # As from the UI or a deployment: plain JSON parameters, validated before the flow body runs.
    with pytest.raises(ParameterTypeError):
        recall(options={"query": "", "home": str(doors_home)})
    with pytest.raises(ParameterTypeError):
        recall(options={"query": "backups", "home": str(doors_home), "max_nodes": 0})


def test_artifact_fence_cannot_be_closed_by_recalled_text() -> None:
    result = {"query": "a | b", "block": "<memory-recall>\n````\nnot closed\n</memory-recall>",
              "hits": [{"score": 0.5, "path": "/A|B", "cite": "conv:1234abcd"}]}
    md = recall_markdown(result)
    assert "`````text\n" in md and "\n`````\n" in md  # a fence longer than the longest run inside
    assert "| 1 | 0.5000 | /A\\|B | conv:1234abcd |" in md and "# Recall: a \\| b" in md
