"""Operations: what a person or an agent asks of a memory home outside the nightly stages.

status, init, forget, rescan, backup/restore, reindex, lint of the vault, maintenance,
schedule, run planning, agent setup and the recall service. This layer sits above the stores
and the stages' pure functions (domain → stores → tasks → ops → flows, cli, servers); every
function here that takes the settings and writes enters a writing session (`session.py`: the
writer lock, then the stores opened under it), so a Python or MCP caller cannot skip the lock.
Functions that take an open session or store run under their caller's lock.
"""
