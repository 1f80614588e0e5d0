"""Settings of the model engine: which engine (`engine`, top level) and the `[model]` section.

One model, `EngineSettings`, is both the `[model]` section of memvault.toml and what
`make_engine` takes; the engine's name stays a top-level setting (`MEMVAULT_ENGINE`).
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EngineName = Literal["auto", "mlx", "openai", "none"]
JsonSchemaMode = Literal["auto", "on", "off"]


class EngineSettings(BaseModel):
    """The language model used by chunk, cluster and synthesize (when engine is not `none`)."""

    model_config = ConfigDict(extra="forbid")

    mlx_model: str | None = Field(
        default=None,
        description=(
            "Local model folder or Hugging Face repo id already in the local cache "
            "(memvault never downloads; fetch with `huggingface-cli download <repo>`)"
        ),
    )
    openai_base_url: str = Field(
        default="http://127.0.0.1:8080/v1",
        description="Base URL of the OpenAI-compatible server (with or without the trailing /v1)",
    )
    openai_model: str | None = Field(
        default=None,
        description=(
            "Model name sent to the server; unset lets a server that serves one model "
            "(mlx_lm.server, llama.cpp) use it. Ollama needs it"
        ),
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the server's API key (the key itself never goes in a file)",
    )
    temperature: float = Field(default=0.2, ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy")
    top_p: float = Field(default=0.95, gt=0.0, le=1.0, description="Nucleus sampling threshold")
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds to wait for one model reply from a server")
    retries: int = Field(
        default=2, ge=0, le=10, description="Extra attempts after a connection error, 5xx or 429 from the server"
    )
    json_schema: JsonSchemaMode = Field(
        default="auto",
        description=(
            "Decoding constrained to each reply's JSON schema: `auto` (mlx: always; a server: sent as "
            "`response_format`, falling back to JSON mode, then plain, when it refuses), `on` (a server "
            "that refuses it is an error), `off` (free decoding; replies are still validated)"
        ),
    )
