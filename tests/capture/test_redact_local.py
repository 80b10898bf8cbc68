"""Redaction by default of what names the machine and its user: the home folder, the working
folders a request names and the login name become same-length placeholders everywhere (body,
headers, response bytes), a prefixed UUID id keeps its shape, and the prose a Responses answer
echoes from its request gets the request's filler."""

from __future__ import annotations

import json

from conformance.capture.folders import HOME_PLACEHOLDER, WORK_PLACEHOLDER, fit
from conformance.capture.redact import RedactionConfig, Redactor, fill_text

HOME = "/home/alice.smith"
WORK = "/srv/builds/alice.smith/checkout-42"


def _redactor(**kw) -> Redactor:
    return Redactor(RedactionConfig(home_folders=(HOME,), login="alice.smith", **kw))


def _body(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}


def test_home_working_folder_and_login_become_same_length_placeholders_everywhere():
    r = _redactor()
    body = _body(f"I'm currently working in the directory: {WORK}\nnotes in {HOME}/.cache; alice.smith wrote it")
    r.collect_identifiers({}, body)
    out = json.dumps(r.redact_body(body))
    assert WORK not in out and HOME not in out and "alice.smith" not in out
    assert fit(WORK_PLACEHOLDER, len(WORK)) in out and fit(HOME_PLACEHOLDER, len(HOME)) + "/.cache" in out
    assert len(out) == len(json.dumps(body))  # the body keeps its byte size
    # the same folder in a later response chunk, and as a slug (Qwen Code's memory folder)
    chunk = f'data: {{"path":"{WORK}/hello.txt","memory":"{WORK.replace("/", "-")}/memory"}}'.encode()
    redacted = r.redact_bytes(chunk).decode()
    assert WORK not in redacted and WORK.replace("/", "-") not in redacted
    assert fit(WORK_PLACEHOLDER, len(WORK)) + "/hello.txt" in redacted


def test_a_folder_matches_only_whole_and_a_generic_account_stays():
    r = Redactor(RedactionConfig(home_folders=("/root",), login="root"))
    text = "agent /root, <root>/x</root>, the root of it"
    assert r.redact_text(text) == text  # /root names nobody; `root` is a word
    r = _redactor()
    r.collect_identifiers({}, _body(f"Working directory: {WORK}"))
    out = r.redact_text(f"{WORK}-old {WORK}x")
    assert WORK_PLACEHOLDER not in out and "checkout-42-old" in out and "checkout-42x" in out
    assert "alice.smith" not in out  # the login name inside a path is still the login name


def test_it_can_be_turned_off():
    r = _redactor(local_folders=False)
    body = _body(f"Working directory: {WORK} for alice.smith")
    r.collect_identifiers({}, body)
    assert r.redact_body(body) == body


def test_a_prefixed_uuid_keeps_its_prefix_and_shape():
    r = _redactor()
    body = {"model": "m", "input": "hi", "prompt_cache_key": "qwen-code:6f1d2c3b-aaaa-4bbb-8ccc-1234567890ab"}
    r.collect_identifiers({}, body)
    assert r.redact_body(body)["prompt_cache_key"] == "qwen-code:00000000-0000-4000-8000-000000000001"


def test_filler_reaches_the_instructions_and_tool_descriptions_a_responses_answer_echoes():
    r = _redactor(prose_filler=True, keep_texts=("hi",))
    instructions = "You are a coding agent. Follow the rules — always."
    description = "Runs a command in a shell and returns its output."
    body = {"model": "m", "instructions": instructions, "input": "hi",
            "tools": [{"type": "function", "name": "exec_command", "description": description,
                       "parameters": {"type": "object"}}]}
    filled = r.redact_body(body)
    assert filled["instructions"] == fill_text(instructions)
    echo = {"type": "response.created", "response": {"instructions": instructions, "tools": body["tools"]}}
    for ascii_only in (False, True):
        chunk = f"event: response.created\ndata: {json.dumps(echo, ensure_ascii=ascii_only)}\n\n".encode()
        out = r.redact_bytes(chunk).decode()
        assert instructions[:20] not in out and description[:20] not in out
        assert json.dumps(fill_text(description))[1:-1] in out
        if not ascii_only:  # as UTF-8 the filler keeps the size; a \u escape is longer than its filler
            assert len(out.encode()) == len(chunk)


def test_a_folder_cut_by_a_chunk_boundary_is_still_replaced_and_the_boundaries_stay():
    from conformance.capture.format import Chunk

    r = _redactor()
    r.collect_identifiers({}, _body(f"Working directory: {WORK}"))
    data = f'data: {{"arguments":"{{\\"file_path\\":\\"{WORK}/hello.txt\\"}}"}}\n\n'.encode()
    cut = data.index(b"alice") + 2
    chunks = [Chunk(0.1, data[:cut]), Chunk(0.2, data[cut:])]
    out = r.redact_chunks(chunks)
    assert [(c.t, len(c.data)) for c in out] == [(0.1, cut), (0.2, len(data) - cut)]
    joined = b"".join(c.data for c in out).decode()
    assert WORK not in joined and fit(WORK_PLACEHOLDER, len(WORK)) + "/hello.txt" in joined


def test_no_bundled_responses_answer_echoes_prose_its_request_does_not_carry():
    """The filled request's `instructions` and tool descriptions are what its answer echoes (the
    real vendor prose is nowhere in the corpus)."""
    from conformance.capture.corpus import scan
    from conformance.capture.reredact import _echoed
    from conformance.core.paths import captured_dir

    seen = 0
    for _, cap in scan(captured_dir()):
        for ex in cap.main_exchanges():
            body = ex.request.body
            if ex.response is None or not isinstance(body, dict) or "instructions" not in body:
                continue
            for response in _echoed(ex.response.chunks):
                seen += 1
                assert response.get("instructions") == body["instructions"], cap.id
                sent = {t.get("name"): t.get("description") for t in body.get("tools", []) if isinstance(t, dict)}
                for tool in response.get("tools") or []:
                    if isinstance(tool, dict) and tool.get("name") in sent:
                        assert tool.get("description") == sent[tool["name"]], (cap.id, tool["name"])
    assert seen >= 10


def test_a_folder_streamed_in_pieces_is_replaced_in_every_piece_and_the_deltas_still_add_up():
    from conformance.capture.format import Chunk

    r = _redactor()
    r.collect_identifiers({}, _body(f"Working directory: {WORK}"))
    args = json.dumps({"file_path": f"{WORK}/copy.txt"})
    cut = args.index("alice") + 3
    events = [{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
               "delta": args[:cut]},
              {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
               "delta": args[cut:]},
              {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0,
               "arguments": args}]
    data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    out = b"".join(c.data for c in r.redact_chunks([Chunk(0.0, data)])).decode()
    seen = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("data:")]
    assert seen[0]["delta"] + seen[1]["delta"] == seen[2]["arguments"]
    assert WORK not in out and "alice" not in out and len(out) == len(data)
