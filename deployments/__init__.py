"""memvault's deployment files: `prefect.yaml` and the launchd / systemd templates.

Reading them is `memvault.ops.deployment_files` (the schedule needs them too, and the core
never imports this package); registering with Prefect is in `deployments.deploy`.
"""
