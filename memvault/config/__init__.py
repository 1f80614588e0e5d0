"""The settings: `memvault.toml` read and validated (`settings`), edited in place
(`settings_file`), and Prefect's environment derived from them (`prefect_env`)."""
