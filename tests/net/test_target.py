"""The one sender's Target: URL joining, the key the way each wire sends it, one TLS context."""

from conformance.net.target import Target, content_predicate, tls_context
from conformance.net.transport import Deadlines
from conformance.wire import ANTHROPIC, CHAT


def test_url_joins_without_doubling_v1():
    assert Target("http://h:1").url("/v1/messages") == "http://h:1/v1/messages"
    assert Target("http://h:1/").url("/v1/messages") == "http://h:1/v1/messages"
    assert Target("http://h:1/v1").url("/v1/messages") == "http://h:1/v1/messages"
    assert Target("http://h:1/v1/").url("/v1/chat/completions", "beta=true") == "http://h:1/v1/chat/completions?beta=true"
    assert Target("http://h:1/v1").url("/tokenize") == "http://h:1/v1/tokenize", "only a /v1 path is de-doubled"


def test_key_style_per_dialect():
    target = Target("http://h:1", api_key="sk-1")
    anthropic = target.headers(ANTHROPIC)
    assert anthropic["x-api-key"] == "sk-1" and "authorization" not in anthropic
    assert anthropic["anthropic-version"] == "2023-06-01"
    # Claude Code with ANTHROPIC_AUTH_TOKEN: the capture shows a bearer token, so one is sent
    bearer = target.headers(ANTHROPIC, {"Authorization": "<redacted:bearer>"})
    assert bearer["authorization"] == "Bearer sk-1" and "x-api-key" not in bearer
    openai = target.headers(CHAT, {"x-session-id": "ses_1"})
    assert openai["authorization"] == "Bearer sk-1" and "x-api-key" not in openai
    assert openai["x-session-id"] == "ses_1" and "anthropic-version" not in openai
    for headers in (anthropic, bearer, openai):
        assert headers["accept-encoding"] == "identity" and headers["content-type"] == "application/json"
    assert "x-api-key" not in Target("http://h:1").headers(ANTHROPIC), "no key, no key header"


def test_content_predicate_is_the_dialects():
    assert content_predicate(ANTHROPIC) == ANTHROPIC.content_started
    assert content_predicate(CHAT) == CHAT.content_started
    assert content_predicate(None) is None


def test_tls_context_is_created_once_per_process(monkeypatch):
    import ssl

    made = []
    real = ssl.create_default_context

    def counting(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    tls_context.cache_clear()
    try:
        target = Target("http://127.0.0.1:1", deadlines=Deadlines(connect=1, first_content=2, total=3))
        for _ in range(3):  # each send builds its own client, all on the one context
            assert target.send_sync(ANTHROPIC, "/v1/messages", b"{}").error_kind == "connect"
        assert tls_context() is tls_context()
        assert len(made) == 1, "creating the default context costs ~0.2 s: once per process"
    finally:
        tls_context.cache_clear()


def test_refused_connection_is_data_with_the_clients_headers():
    raw = Target("http://127.0.0.1:1", api_key="sk-1", deadlines=Deadlines(connect=1, first_content=2, total=3)) \
        .send_sync(CHAT, "/v1/chat/completions", b"{}")
    assert raw.error_kind == "connect" and raw.status is None
    assert raw.url == "http://127.0.0.1:1/v1/chat/completions"
    assert raw.request_headers["authorization"] == "Bearer sk-1" and raw.request_body == b"{}"
