"""The live path, light enough for a hook: the spool (`spool`), the hook daemon's client
(`hookd_client`), the hub's wire format and pusher (`hub_wire`, `hub_push`) and the prompt
gate (`prompt_gate`). Nothing here imports Prefect, DuckDB or LanceDB at module level."""
