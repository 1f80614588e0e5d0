"""Noise filters: memvault's own injected blocks and calls, low-value acknowledgements."""

from memvault.models import Conversation, Message
from memvault.hygiene.noise import MEMVAULT_SELF_CALL_SENTINEL, is_own_conversation, mark_low_value, strip_memory_blocks


def test_strip_memory_blocks_keeps_the_rest() -> None:
    text = (
        "<memory-recall>\n- [[Decorators]] said X\n</memory-recall>\n"
        "How do I add retries?\n"
        '<memvault-index version="1">\n[[Retries]]\n[[Prefect]]\n</memvault-index>'
    )
    assert strip_memory_blocks(text) == "How do I add retries?"
    assert strip_memory_blocks("plain text  ") == "plain text  "


def test_is_own_conversation_only_for_a_recorded_prompt() -> None:
    from memvault.hygiene.selfcalls import prompt_digest

    prompt = f"{MEMVAULT_SELF_CALL_SENTINEL}\nSummarize these chunks"
    mine = Conversation(source="claude-code", native_id="a", messages=[
        Message(native_id="1", role="user", text=f"  {prompt}\r\n")])
    pasted = Conversation(source="claude-code", native_id="b", messages=[
        Message(native_id="1", role="user", text=f"{prompt} — what is this?")])
    recorded = frozenset({prompt_digest(prompt)})
    assert is_own_conversation(mine, recorded)
    assert not is_own_conversation(pasted, recorded)
    assert not is_own_conversation(mine, frozenset())  # nothing recorded: nothing is memvault's


def test_mark_low_value() -> None:
    texts = ["thanks", "ok", "thank you!", "👍", "", "Thanks so much!", "ok, now add tests", "no, use duckdb"]
    messages = [Message(native_id=str(i), role="user", text=t) for i, t in enumerate(texts)]
    messages.append(Message(native_id="tool", role="tool", kind="tool_result", text="done"))
    mark_low_value(messages)
    assert [m.low_value for m in messages] == [True] * 6 + [False, False, False]
    custom = [Message(native_id="x", role="user", text="roger")]
    assert mark_low_value(custom, [r"roger"])[0].low_value


def test_bare_slash_commands_are_low_value() -> None:
    from memvault.hygiene.noise import is_low_value

    for text in ("/mode", "/model opus", "/clear", " /compact "):
        assert is_low_value(text), text
    for text in ("/review this PR and tell me what breaks", "use /mode to switch themes", "/etc/fstab has a typo?"):
        assert not is_low_value(text), text
