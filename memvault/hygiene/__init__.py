"""What keeps text clean before it is stored or shown: secret redaction (`redact`, its rule
table `redact_rules`), agent noise and low-value turns (`noise`), memvault's own model calls
(`selfcalls`), the topics the user asked to ignore (`topics`), and terminal control characters
(`terminal`)."""
