"""Settings of the model engine; the root settings nest this section as `engine`."""

from typing import Literal

from pydantic import BaseModel, Field


class EngineSettings(BaseModel):
    """Which model answers the model-backed stages, and how to reach it."""

    engine: Literal["auto", "mlx", "openai", "none"] = Field(
        default="auto",
        description=(
            "Model engine: `mlx` (mlx-lm in process), `openai` (an OpenAI-compatible server), "
            "`none` (no model: embedding-based and extractive paths), or `auto` (mlx if `mlx_model` "
            "loads, else openai if its server answers, else none)."
        ),
    )
    mlx_model: str | None = Field(
        default=None,
        description=(
            "Local model folder or Hugging Face repo id already in the local cache "
            "(memvault never downloads; fetch with `huggingface-cli download <repo>`)."
        ),
    )
    openai_base_url: str = Field(
        default="http://127.0.0.1:8080/v1",
        description="Base URL of the OpenAI-compatible server (with or without the trailing /v1).",
    )
    openai_model: str | None = Field(
        default=None,
        description=(
            "Model name sent to the server; unset lets a server that serves one model "
            "(mlx_lm.server, llama.cpp) use it. Ollama needs it."
        ),
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the server's API key (the key itself never goes in a file).",
    )
    temperature: float = Field(default=0.2, ge=0.0, description="Sampling temperature; 0 is greedy.")
    top_p: float = Field(default=0.95, gt=0.0, le=1.0, description="Nucleus sampling threshold.")
    timeout_s: float = Field(default=120, gt=0, description="Seconds to wait for one model reply from a server.")
    retries: int = Field(
        default=2, ge=0, description="Extra attempts after a connection error, 5xx or 429 from the server."
    )
