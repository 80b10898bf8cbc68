"""The one scrubber: every spelling of a known secret, userinfo in any URL, the key environment
variables, idempotence, and the floor under which a value is not scrubbed by value."""

from __future__ import annotations

import base64
import html
import json
from urllib.parse import quote

from conformance.core.secrets import (
    MIN_SECRET_LENGTH,
    Scrubber,
    env_secrets,
    redact_named_fields,
    redact_named_params,
    url_secrets,
)

KEY = 'sk-"odd"/key<&>é-1234'


def test_every_spelling_of_a_known_secret_is_replaced():
    scrubber = Scrubber({"api-key": KEY})
    for spelled in (KEY, json.dumps(KEY)[1:-1], json.dumps(KEY, ensure_ascii=False)[1:-1], html.escape(KEY),
                    quote(KEY, safe="")):
        assert scrubber.text(f"[{spelled}]") == "[<redacted:api-key>]", spelled
    assert scrubber.bytes(f"x {KEY} y".encode()) == b"x <redacted:api-key> y"


def test_userinfo_of_any_url_is_cut_and_scrubbing_twice_changes_nothing():
    scrubber = Scrubber({})
    once = scrubber.text("see https://bob:hunter2@example.com/x and ftp://anon@host, not a@b.c")
    assert once == "see https://<redacted:userinfo>@example.com/x and ftp://<redacted:userinfo>@host, not a@b.c"
    assert scrubber.text(once) == once


def test_a_registered_url_gives_its_password_and_basic_credential():
    found = url_secrets("target", "http://al%40ice:p%2Fss-word@h:1/v1")
    scrubber = Scrubber(found)
    basic = base64.b64encode(b"al@ice:p/ss-word").decode()
    assert scrubber.text(f"Basic {basic}; pw p/ss-word") == "Basic <redacted:target-basic>; pw <redacted:target-password>"
    assert url_secrets("target", "http://h:1/v1") == {}


def test_key_environment_variables_and_the_length_floor():
    env = {"ANTHROPIC_API_KEY": "sk-env-value-1", "GITHUB_TOKEN": "ghp_0123456789", "HOME": "/root/secret-place",
           "HF_HUB_DISABLE_TOKEN": "true", "DB_PASSWORD": "", "CONFORMANCE_RUN_TOKEN": "0123456789ab"}
    assert env_secrets(env) == {"env:ANTHROPIC_API_KEY": "sk-env-value-1", "env:GITHUB_TOKEN": "ghp_0123456789"}
    scrubber = Scrubber({"api-key": "x" * (MIN_SECRET_LENGTH - 1), **env_secrets(env)})
    assert scrubber.text("xxx sk-env-value-1") == "xxx <redacted:env:ANTHROPIC_API_KEY>"


def test_secrets_known_by_name():
    assert redact_named_params("a=1&api-key=v&max_tokens=5&token=t") == \
        "a=1&api-key=<redacted:api_key>&max_tokens=5&token=<redacted:token>"
    body = {"password": "p", "max_tokens": 5, "tools": [{"input_schema": {"properties": {"token": {"type": "string"}}}}],
            "messages": [{"content": "set key=value"}]}
    assert redact_named_fields(body) == {**body, "password": "<redacted:password>"}


def test_a_secret_cut_short_by_an_excerpt_is_found_but_a_short_coincidence_is_not():
    key = "sk-echoed-SECRET-key-7f3a9c"  # 27 characters: found from its first 9 on
    scrubber = Scrubber({"api-key": key})
    assert scrubber.text('{"seen": "invalid key sk-echoed-SEC"}') == '{"seen": "invalid key <redacted:api-key>"}'
    assert scrubber.text(f"{key[:12]}…") == "<redacted:api-key>…"
    assert scrubber.text(f"{key}{key[:10]}, then sk-echo") == "<redacted:api-key><redacted:api-key>, then sk-echo"
    assert scrubber.bytes(f"x {key[:20]}".encode()) == b"x <redacted:api-key>"
