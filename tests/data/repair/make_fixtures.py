"""Regenerate the conversation fixtures: python make_fixtures.py (from this directory).

Each big response is 6 KB or more of numbered lines; everything else is small,
with unusual spacing and non-ASCII text, so that an untouched-bytes check means
something.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent


def big(label: str, lines: int = 200) -> str:
    return "".join(f"{label} line {n:04d}: lorem ipsum dolor sit amet\n" for n in range(lines))


def chat() -> list[dict[str, object]]:
    return [
        {"role": "system", "content": "Tu es un assistant. 日本語も話せます。"},
        {"role": "user", "content": "Read the file and list the directory."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_read", "type": "function",
             "function": {"name": "fs_read_file", "arguments": "{\"path\": \"big.log\"}"}},
            {"id": "call_ls", "type": "function",
             "function": {"name": "fs_list_files", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_read", "content": big("big.log") + "fin ✓"},
        {"role": "tool", "tool_call_id": "call_ls", "content": "a.txt\nb.txt\n"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_grep", "type": "function",
             "function": {"name": "grep", "arguments": "{\"q\": \"x\"}"}},
        ]},
        {"role": "tool", "tool_call_id": "call_grep", "content": [
            {"type": "text", "text": big("grep-a", 120)},
            {"type": "text", "text": big("grep-b", 120)},
        ]},
        {"role": "assistant", "content": "Done — voilà."},
    ]


def responses() -> dict[str, object]:
    return {"model": "gpt-test", "input": [
        {"role": "user", "content": "run the tests"},
        {"type": "function_call", "call_id": "fc_1", "name": "shell",
         "arguments": "{\"cmd\": \"pytest\"}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": big("pytest", 300)},
        {"type": "function_call", "call_id": "fc_2", "name": "shell",
         "arguments": "{\"cmd\": \"ls\"}"},
        {"type": "function_call_output", "call_id": "fc_2", "output": "README.md\n"},
        {"type": "function_call", "call_id": "fc_3", "name": "fetch", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_3",
         "output": [{"type": "input_text", "text": big("page", 150)}]},
    ]}


def anthropic() -> list[dict[str, object]]:
    return [
        {"role": "user", "content": "What is in the logs?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_01", "name": "read_logs", "input": {"n": 1}},
            {"type": "tool_use", "id": "toolu_02", "name": "stat", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": big("server", 250)},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "size: 12"},
        ]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_03", "name": "screenshot", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_03", "is_error": False, "content": [
                {"type": "text", "text": big("ocr", 180)},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "iVBORw0KGgo="}},
            ]},
        ]},
        {"role": "assistant", "content": "Les journaux montrent 250 lignes."},
    ]


def main() -> None:
    (HERE / "chat.json").write_text(json.dumps(chat(), indent=2, ensure_ascii=False) + "\n",
                                    encoding="utf-8")
    (HERE / "chat.jsonl").write_text(
        "".join(json.dumps(m, separators=(", ", ": ")) + "\n" for m in chat()), encoding="utf-8")
    (HERE / "responses.json").write_text(json.dumps(responses(), indent="\t") + "\n",
                                         encoding="utf-8")
    (HERE / "anthropic.json").write_text(
        json.dumps(anthropic(), indent=1, ensure_ascii=False), encoding="utf-8")
    (HERE / "anthropic.jsonl").write_text(
        "".join(json.dumps(m, ensure_ascii=False) + "\r\n" for m in anthropic()),
        encoding="utf-8")
    (HERE / "malformed.json").write_text('[\n  {"role": "user", "content": "hi"},\n'
                                         '  {"role": "tool" "content": "x"}\n]\n',
                                         encoding="utf-8")
    (HERE / "malformed.jsonl").write_text('{"role": "user", "content": "hi"}\n'
                                          '{"role": "tool", "content": "x\n',
                                          encoding="utf-8")


if __name__ == "__main__":
    main()
