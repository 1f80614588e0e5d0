"""`memvault deploy`: register the deployments of prefect.yaml with the running Prefect server.

Names, entrypoints, descriptions, tags, parameters, work pool and the maintenance cron come
from prefect.yaml; the nightly time and the time zone from settings; the working directory is
where memvault is installed (a `LocalStorage` source), so a process worker started anywhere
runs the installed code. Re-running it updates the deployments in place (idempotent).
"""

import os
from pathlib import Path
from typing import Any

from memvault.errors import ConfigError, MemvaultError
from memvault.ops.deployment_files import deployment_specs, install_root, work_pool_name
from memvault.ops.schedule import nightly_cron, schedule_timezone
from memvault.config.settings import Settings


def api_url() -> str:
    """PREFECT_API_URL, or a clear error: deployments only make sense on a running server."""
    from prefect.settings import get_current_settings

    url = os.environ.get("PREFECT_API_URL") or get_current_settings().api.url
    if not url:
        raise ConfigError("PREFECT_API_URL is not set — start a server (`prefect server start`, or `memvault "
                          "schedule`) and export PREFECT_API_URL=http://127.0.0.1:4200/api, then run this again")
    return str(url)


def planned(settings: Settings, at: str | None = None) -> list[dict[str, Any]]:
    """What will be registered: one plain dict per deployment (also shown by `--dry-run`)."""
    tz = schedule_timezone(settings)
    out = []
    for name, spec in deployment_specs().items():
        params = dict(spec.get("parameters") or {})
        params["options"] = {**(params.get("options") or {}), "home": str(settings.home)}
        schedules = spec.get("schedules") or []
        # Only scheduled deployments get a cron; `recall` is run by hand from the UI.
        cron = nightly_cron(at or f"{settings.schedule.at:%H:%M}") if name == "nightly" else \
            (schedules[0]["cron"] if schedules else None)
        out.append({"name": name, "flow_entrypoint": spec["entrypoint"], "description": spec.get("description"),
                    "tags": spec.get("tags") or [], "parameters": params, "cron": cron, "timezone": tz,
                    "work_pool": spec["work_pool"]["name"], "concurrency_limit": spec.get("concurrency_limit"),
                    "working_directory": str(install_root()),
                    # A deployment whose parameters are asked for at run time (recall's query)
                    # cannot be validated before it is registered; the server enforces the schema.
                    "validate": not spec.get("ask_at_run", False)})
    return out


def ensure_work_pool(name: str) -> bool:
    """Create the process work pool if missing (with Prefect's default job template); True if created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(
                name=name, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))
            return True
    if pool.type != "process":
        raise ConfigError(f"work pool `{name}` exists with type `{pool.type}`, not `process` — "
                          "delete it (`prefect work-pool delete`) or rename the pool in deployments/prefect.yaml")
    return False


def register(settings: Settings, at: str | None = None) -> dict[str, Any]:
    """Register (or update) every deployment; returns what was registered and where."""
    from prefect.deployments.runner import RunnerDeployment
    from prefect.exceptions import ParameterTypeError
    from prefect.flows import Flow, load_flow_from_entrypoint
    from prefect.runner.storage import LocalStorage
    from prefect.schedules import Cron

    url = api_url()
    root = install_root()
    pool = work_pool_name()
    try:
        created_pool = ensure_work_pool(pool)
    except (OSError, RuntimeError) as exc:
        raise MemvaultError(f"cannot reach the Prefect server at {url} ({exc}) — is `prefect server start` "
                            "running? (`memvault schedule` keeps one alive)") from None
    registered = []
    for plan in planned(settings, at):
        flow: Flow[..., Any] = load_flow_from_entrypoint(str(root / plan["flow_entrypoint"]))
        try:
            if plan["validate"]:
                flow.validate_parameters(plan["parameters"])
        except ParameterTypeError as exc:
            raise ConfigError(f"deployments/prefect.yaml: invalid parameters for `{plan['name']}`: {exc}") from None
        deployment = RunnerDeployment.from_storage(
            storage=LocalStorage(str(root)), entrypoint=plan["flow_entrypoint"], name=plan["name"],
            schedules=[Cron(plan["cron"], timezone=plan["timezone"])] if plan["cron"] else [],
            parameters=plan["parameters"],
            description=plan["description"], tags=plan["tags"], work_pool_name=plan["work_pool"],
            concurrency_limit=plan["concurrency_limit"], enforce_parameter_schema=True,
        )
        # from_storage is sync_compatible: called from sync code it returns the deployment itself.
        assert isinstance(deployment, RunnerDeployment)
        deployment_id = deployment.apply()
        registered.append({**plan, "id": str(deployment_id), "full_name": f"{flow.name}/{plan['name']}"})
    return {"api_url": url, "work_pool": pool, "work_pool_created": created_pool,
            "install_root": str(root), "deployments": registered}


def remove_schedules() -> list[str]:
    """Delete the schedules of memvault's deployments (the deployments stay, runnable by hand)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    api_url()
    cleared = []
    with get_client(sync_client=True) as client:
        for name, spec in deployment_specs().items():
            flow_name = Path(spec["entrypoint"]).name.split(":")[1]
            try:
                dep = client.read_deployment_by_name(f"{flow_name}/{name}")
            except ObjectNotFound:
                continue
            for schedule in dep.schedules:
                client.delete_deployment_schedule(dep.id, schedule.id)
            cleared.append(f"{flow_name}/{name}")
    return cleared
