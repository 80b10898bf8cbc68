"""Convert the Gemma 3 270M GGUF into an ordinary model folder (config, tokenizer, bf16
safetensors) that vLLM on the CPU can load: vLLM's GGUF loading needs a plugin whose compiled part
is CUDA-only (../shared/design/PEERS.md, snag 3).

Run with the vLLM venv's interpreter: python convert_model.py GGUF_FILE OUT_DIR
The tokenizer comes from transformers' GGUF reader (AutoTokenizer ... gguf_file=) and
save_pretrained; the weights are dequantized by transformers' GGUF loader. Its save_pretrained
refuses a model loaded from a quantized GGUF, so the state dict is written with safetensors
directly. Written to OUT_DIR.tmp and renamed, so a half-written folder is never taken as cached.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> int:
    gguf = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2]).resolve()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tok.save_pretrained(str(tmp))
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    model.config.save_pretrained(str(tmp))
    # The config as saved still says "quantized GGUF" and names no architecture; vLLM needs the
    # architecture and must not look for a GGUF quantization.
    cfg_path = tmp / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg.pop("quantization_config", None)
    cfg["architectures"] = [type(model).__name__]
    cfg["dtype"] = "bfloat16"
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    # Gemma ends a chat turn with <end_of_turn>: make it a stop token beside <eos>.
    gen = model.generation_config.to_dict() if model.generation_config is not None else {}
    eos = gen.get("eos_token_id") or tok.eos_token_id
    eos = list(eos) if isinstance(eos, list) else [eos]
    end_of_turn = tok.convert_tokens_to_ids("<end_of_turn>")
    if isinstance(end_of_turn, int) and end_of_turn != tok.unk_token_id and end_of_turn not in eos:
        eos.append(end_of_turn)
    gen_cfg = {k: v for k, v in gen.items() if not k.startswith("_") and v is not None}
    gen_cfg["eos_token_id"] = eos
    (tmp / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2), encoding="utf-8")
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    if getattr(model.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)  # tied to the embeddings; safetensors refuses shared storage
    save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"wrote {out}: {len(state)} tensors, architecture {cfg['architectures']}, eos {eos}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
