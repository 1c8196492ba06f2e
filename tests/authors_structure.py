"""The KoED authors' pipeline, restated as checks on requests (never their code or words).

Read from simuzin/KoED at commit 2273b3e. Each check names the lines of their scripts it
follows, so a reader can hold one against the other:

- LLMs/open_source.py (the four open models) and LLMs/claude.py (Claude): the listener.
- output/experiment_results/postprocessing.py: what of each reply was judged.
- LLMs/eval.py: the judge.

What a check looks at is the *structure* (message roles, what sits in the system and what
in the user message, the transcript's labels and text, prefixes, the order and settings of
calls); the wording is ours and is checked only where the structure is in a word
(``Listener: ``, ``Score:``, the language's name).
"""

from __future__ import annotations

from typing import Any

LANGUAGE = {"ko": "Korean", "en": "English"}
CRITERIA = ("EX", "IP", "ER", "EEA", "CA")
"""eval.py, main() (from line 177): the criteria list, judged in this order per response."""


def transcript(turns: list[dict[str, Any]], lang: str) -> list[str]:
    """open_source.py, the ``dialogue_text`` loop and the even-count trim (lines 77-93;
    claude.py the same): the turns that have text in the language, labelled ``Speaker:`` then
    ``Listener:`` alternately (English labels for Korean too), the text exactly as the file
    has it (``_comma_`` kept); when the count is even the last line (a Listener turn) is
    dropped, so the context ends on the Speaker."""
    key = "ko_utter" if lang == "ko" else "utter"
    texts = [t[key] for t in turns if t.get(key)]
    lines = [f"{'Speaker' if i % 2 == 0 else 'Listener'}: {text}" for i, text in enumerate(texts)]
    if len(lines) % 2 == 0:
        lines = lines[:-1]
    return lines


def check_emotion_call(request: dict[str, Any], turns: list[dict[str, Any]], lang: str) -> None:
    """open_source.py, ``common_task_definition`` (line 66) and ``scenarios`` (from line 98): a system message (the common task
    definition naming the dialogue's language, then the 34 labels, glossed) and a user
    message (the dialogue, then the step-by-step instruction that stops at the emotion);
    ``max_new_tokens=256`` (line 154)."""
    messages = request["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert f"in {LANGUAGE[lang]}" in system.split("\n")[0], "the task names the language"
    assert system.count("), ") >= 33, "the 34 labels, each glossed, in the system message"
    assert "정" in system and "한" in system
    for line in transcript(turns, lang):
        assert line in user, f"transcript line missing or changed: {line!r}"
    assert "Speaker:" not in system, "the dialogue is in the user message only"
    assert request["max_tokens"] == 256


def check_reply_call(
    request: dict[str, Any], emotion_call: dict[str, Any], emotion_answer: str, lang: str
) -> None:
    """open_source.py, lines 160-166 (claude.py line 141): the same messages again, the user message extended
    by the identified emotion (the first answer) and the step asking for the reply in the
    dialogue's language; the system message unchanged; the same token limit."""
    first_system, first_user = (m["content"] for m in emotion_call["messages"])
    messages = request["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == first_system
    assert messages[1]["content"].startswith(first_user)
    added = messages[1]["content"][len(first_user) :]
    assert emotion_answer.strip() in added and LANGUAGE[lang] in added
    assert request["max_tokens"] == 256


def judged_text_open(reply: str) -> str:
    """postprocessing.py, ``process_listener_response`` and ``clean_listener_response``
    (lines 32-47), for the open models: the reply was stored as ``"Listener: " + reply``;
    what was judged starts at the first ``Listener:`` *inside* the reply when it has one,
    and stops at the reply's first blank line."""
    at = reply.find("Listener:")
    kept = reply[at + len("Listener:") :] if at >= 0 else reply
    return kept.split("\n\n")[0].strip()


def judged_text_open_repr(reply: str) -> str:
    """postprocessing.py, ``process_file`` as it ran on open_source.py's output: the stored
    value was ``"Listener: " + str(message_dict)``, so the regexes of
    ``process_listener_response`` read the dict's repr (quotes, backslash-n) and
    ``clean_listener_response`` cuts at a literal backslash-n backslash-n; the leading
    ``Listener: `` is the judge prompt's to add."""
    import re

    stored = "Listener: " + str({"role": "assistant", "content": reply})
    found = re.search(r"'content': (.*?Listener:\s*.*)}", stored)
    if found:
        kept = found.group(1).strip()
    else:
        rest = re.search(r"'content':\s*(.*)}", stored)
        kept = "Listener: " + rest.group(1).strip() if rest else stored.strip()
    cut = re.search(r"(Listener:.*?)(?:\\n\\n|$)", kept, re.DOTALL)
    final = cut.group(1).strip() if cut else kept.strip()
    return final[len("Listener:") :].lstrip() if final.startswith("Listener:") else final


def judged_text_claude(reply: str) -> str:
    """postprocessing.py, ``claude_process_json`` (from line 126; the rule at line 155): the whole reply, or,
    when it names ``Listener:`` itself (any case), what follows the last one."""
    lower = reply.lower()
    at = lower.rfind("listener:")
    return reply[at + len("listener:") :].strip() if at >= 0 else reply.strip()


def check_judge_call(
    request: dict[str, Any], criterion: str, turns: list[dict[str, Any]], lang: str, judged: str
) -> None:
    """eval.py, ``evaluate_scenario`` (from line 49; the messages at lines 112-126): per criterion, a system message (the
    common instruction, then that criterion's definition and its five score anchors; CA
    within "{Language} culture") and a user message (the dialogue as the listener saw it,
    the response prefixed ``Listener: ``, a Feedback / Score format); gpt-4o at
    temperature 0.7 with 256 tokens (lines 138-139)."""
    messages = request["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert f"({criterion})" in system, "the criterion is defined in the system message"
    assert all(f"Score {n}:" in system for n in range(1, 6)), "its five anchors there too"
    if criterion == "CA":
        assert f"{LANGUAGE[lang]} culture" in system
    for line in transcript(turns, lang):
        assert line in user, f"the judge's dialogue lost or changed {line!r}"
    assert f"Listener: {judged}" in user, "the judged response, prefixed 'Listener: '"
    assert "Feedback:" in user and "Score:" in user
    assert request["temperature"] == 0.7 and request["max_tokens"] == 256
