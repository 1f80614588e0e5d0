"""CLI commands (registered on the shared Typer app when this module is imported)."""

import typer

from memvault.cli.app import _settings, app
from memvault.cli.output import JsonOpt, console, render, reporting


@app.command()
def model(
    ctx: typer.Context,
    probe: bool = typer.Option(False, "--probe", help="Choose the engine as a run would (auto loads or probes) and say why."),
    as_json: bool = JsonOpt,
) -> None:
    """The configured model engine, the hash of each stage's prompt, and the run budget.

    A prompt's hash covers its template and the vault's Meta pages; it changes when either is edited.

    Example: memvault model --probe
    """
    from memvault.ops.home import require_home
    from memvault.prompts import prompt_hashes

    with reporting(as_json):
        settings = _settings(ctx)
        require_home(settings.home)
        data = {"engine": settings.engine, "mlx_model": settings.model.mlx_model,
                "openai_base_url": settings.model.openai_base_url, "openai_model": settings.model.openai_model,
                "prompts": prompt_hashes(settings.home / "Meta"),
                "budget": {"max_tokens": settings.budget.max_tokens, "max_seconds": settings.budget.max_seconds}}
        if probe:
            from tasks.context import build_engine

            engine, reason = build_engine(settings)
            data["chosen"] = {"engine": engine.name, "reason": reason}

        def text() -> None:
            console.print(f"engine: {data['engine']} (mlx_model {data['mlx_model'] or 'unset'}, "
                          f"server {data['openai_base_url']})", highlight=False)
            for stage, digest in data["prompts"].items():
                console.print(f"prompt {stage}: {digest}")
            console.print(f"budget: {data['budget']['max_tokens']} tokens, {data['budget']['max_seconds']:g} s per run")
            if "chosen" in data:
                console.print(f"a run would use: {data['chosen']['reason']}", highlight=False)

        render(as_json, data, text)
