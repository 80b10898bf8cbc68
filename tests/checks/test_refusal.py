"""What a refusal says: the error text from any envelope, and the request field it names."""

from __future__ import annotations

import json

from conformance.checks.refusal import error_text, named_field


def test_error_text_reads_every_common_envelope():
    assert error_text(b'{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}') == "bad"
    assert error_text(json.dumps({"detail": [{"loc": ["body", "x"], "msg": "Extra inputs are not permitted"}]})
                      .encode()) == "Extra inputs are not permitted; at body.x"
    assert error_text(b"upstream connect error") == "upstream connect error"
    assert len(error_text(b"x" * 5000)) == 600


def test_named_field_prefers_sub_keys_and_system_role():
    req = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"},
           "messages": [{"role": "user", "content": "x"}, {"role": "system", "content": "y"}]}
    assert named_field("output_config.effort: 'xhigh' is not one of low, medium, high", req) == "/output_config/effort"
    assert named_field("messages: role 'system' is not allowed here", req) == "/messages/1/role"
    assert named_field("something unrelated went wrong", req) is None


def test_named_field_ignores_prose_words_not_written_as_fields():
    req = {"model": "gemma3-270m", "max_tokens": 160, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    # LiteLLM wraps every upstream error in "model group ... failed": no field is named there
    litellm = ('litellm.BadRequestError: OpenAIException - {"error":{"code":400,"message":"item[\'content\'] '
               'is not an array"}}\n\nLiteLLM: model group \'gemma3-270m\' failed with the error above.')
    assert named_field(litellm, req) is None
    assert named_field("the stream ended early", req) is None
    assert named_field("1 validation error: body.messages Input should be a valid list", req) == "/messages"
    assert named_field("'model' is a required property", req) == "/model"
    assert named_field("max_tokens: must be at most 8192", req) == "/max_tokens"
