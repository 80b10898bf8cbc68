"""The one context-limit discovery (conformance.probes.limit): the documents read in order, the
option first; the probes read it through their target, the suite through its session."""

from __future__ import annotations

import pytest

from conformance.probes.common import run_sync
from conformance.probes.limit import OPTION, LimitInfo, discover, discover_limit


def _fetcher(documents: dict[str, tuple[int | None, object]]):
    asked: list[str] = []

    def fetch(path: str):
        asked.append(path)
        return documents.get(path, (404, None))

    return fetch, asked


VLLM = {"data": [{"id": "other", "max_model_len": 2048}, {"id": "served", "max_model_len": 32768}]}


def test_the_served_models_entry_wins_and_props_is_not_asked():
    fetch, asked = _fetcher({"/v1/models": (200, VLLM)})
    info = discover(fetch, "served")
    assert (info.limit, info.source, info.origin) == (32768, "/v1/models max_model_len", "/v1/models max_model_len")
    assert asked == ["/v1/models"]
    assert discover(fetch, "unknown-model").advertised == 2048, "an unlisted model reads the first entry"


@pytest.mark.parametrize("entry, limit, source", [
    ({"id": "m", "context_length": 8192}, 8192, "/v1/models context_length"),
    ({"id": "m", "context_window": 4096, "max_context_length": 1}, 4096, "/v1/models context_window"),
    ({"id": "m", "meta": {"n_ctx": 16384, "n_ctx_train": 131072}}, 16384, "/v1/models meta.n_ctx"),
])
def test_every_models_key_is_read_in_order(entry, limit, source):
    fetch, _ = _fetcher({"/v1/models": (200, {"data": [entry]})})
    info = discover(fetch, "m")
    assert (info.advertised, info.source) == (limit, source)


@pytest.mark.parametrize("props", [{"n_ctx": 4096}, {"default_generation_settings": {"n_ctx": 4096}},
                                   {"n_ctx": "4096", "default_generation_settings": {"n_ctx": 4096}}])
def test_llama_cpp_props_when_the_models_list_tells_nothing(props):
    fetch, asked = _fetcher({"/v1/models": (200, {"data": [{"id": "m", "meta": {"n_ctx_train": 1}}]}),
                             "/props": (200, props)})
    info = discover(fetch, "m")
    assert (info.advertised, info.source) == (4096, "/props n_ctx")
    assert asked == ["/v1/models", "/props"]


def test_only_a_2xx_document_counts_and_nothing_advertised_is_unknown():
    fetch, _ = _fetcher({"/v1/models": (500, VLLM), "/props": (404, {"n_ctx": 4096})})
    info = discover(fetch, "served")
    assert not info.known and info.limit is None and info.origin == ""
    assert info.describe() == "limit unknown (the target advertises none)"
    fetch, _ = _fetcher({"/v1/models": (None, None)})  # nothing answers
    assert not discover(fetch, "m").known


def test_the_option_wins_and_the_advertised_value_is_still_read():
    fetch, _ = _fetcher({"/v1/models": (200, VLLM)})
    info = discover(fetch, "served", configured=1000)
    assert (info.limit, info.origin, info.advertised) == (1000, OPTION, 32768)
    assert info.describe() == "limit 1000 (from the option); advertised 32768 (/v1/models max_model_len)"
    assert LimitInfo(configured=1000).origin == OPTION


def test_the_probe_target_reads_the_reference_engine(engine, make_target):
    info = run_sync(discover_limit(make_target(engine(max_context=4096))))
    assert (info.limit, info.source, info.configured) == (4096, "/v1/models max_model_len", None)
    wrong = run_sync(discover_limit(make_target(engine("advertised-context-wrong", max_context=4096)), 3000))
    assert (wrong.limit, wrong.advertised) == (3000, 8192)
