"""The haystack and the needle: deterministic filler text with one fact placed at a depth.

Rules:
- Haystacks are generated deterministically: seeded sentences from fixed word lists, one generator
  per block of BLOCK sentences, so sentence i never depends on how many were asked for or in which
  order. They never contain the needle's words.
- Needle convention (the reference engine follows the same one, docs/engine.md): the statement
  `The secret passphrase is PHRASE.` placed at a sentence boundary at the depth (0% = the very
  start, 100% = right before the question), then the question after the haystack. A hit is the
  phrase in the answer text.
- A phrase is deterministic per key (`needle_phrase`), e.g. 'cobalt-4817-willow'.
- Used by the context probes (`conformance.probes.sizing`) and the phase figures
  (`conformance.probes.phases`, haystack text as a prompt of a chosen length).
"""

from __future__ import annotations

import random
from functools import lru_cache

HAYSTACK_SEED = 20261129
NEEDLE_STATEMENT = "The secret passphrase is {phrase}."
NEEDLE_QUESTION = ("What is the secret passphrase stated in the text above? "
                   "Answer with the passphrase only.")

_SUBJECTS = ["The old gardener", "A quiet engineer", "The river pilot", "A young painter", "The night baker",
             "A patient teacher", "The harbor clerk", "A tired courier", "The village doctor", "A curious student",
             "The mountain guide", "A careful tailor"]
_VERBS = ["repaired", "painted", "carried", "described", "measured", "ordered", "borrowed", "cleaned",
          "noticed", "sketched", "sorted", "wrapped"]
_OBJECTS = ["a wooden chair", "the blue lantern", "an iron kettle", "the garden gate", "a paper map",
            "the copper bell", "a wool blanket", "the stone bench", "a glass bottle", "the oak table",
            "a linen sack", "the brass clock"]
_PLACES = ["near the harbor", "before sunrise", "behind the mill", "after the storm", "at the market",
           "beside the canal", "in the late afternoon", "under the bridge", "on the north road",
           "during the festival", "by the old well", "inside the station"]
PHRASE_WORDS = ["amber", "falcon", "meadow", "cobalt", "harbor", "juniper", "quartz", "saffron",
                 "tundra", "velvet", "willow", "zephyr"]


BLOCK = 256  # sentences per seeded generator


@lru_cache(maxsize=256)
def _block(seed: int, b: int) -> tuple[str, ...]:
    rng = random.Random(seed * 7919 + b)  # one generator per block: sentence i never depends on call order
    return tuple(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}."
                 for _ in range(BLOCK))


def haystack(n: int, seed: int = HAYSTACK_SEED) -> list[str]:
    """The first n sentences of the deterministic haystack for `seed` (same n, same text)."""
    out: list[str] = []
    b = 0
    while len(out) < n:
        out.extend(_block(seed, b))
        b += 1
    return out[:n]


def needle_phrase(key: str) -> str:
    """A deterministic phrase per probe point, e.g. 'cobalt-4817-willow'."""
    rng = random.Random(f"needle:{key}")
    return f"{rng.choice(PHRASE_WORDS)}-{rng.randint(1000, 9999)}-{rng.choice(PHRASE_WORDS)}"


def needle_text(n: int, depth: float, phrase: str, seed: int = HAYSTACK_SEED) -> str:
    sentences = list(haystack(n, seed))
    at = round(depth * n)
    sentences.insert(at, NEEDLE_STATEMENT.format(phrase=phrase))
    return " ".join(sentences) + "\n\n" + NEEDLE_QUESTION
