"""Build a tiny random Qwen2 causal LM and a locally trained byte-level BPE tokenizer (no downloads).

usage: make_tiny_model.py OUT_DIR
CRL_TOKENIZER_NO_TTI=1 saves the tokenizer with model_input_names=["input_ids", "attention_mask"]: with
transformers 4.57 (the 747d1bd stack) it would otherwise also return token_type_ids, which Qwen2 generate()
rejects. The 0.4.4 stack (transformers 5) runs without it, as it was first recorded.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    corpus = [
        "What is 2 + 3? The answer is 5.", "Compute 7 times 6. The answer is 42.",
        "Name a color. Blue is a color.", "Count to five: one two three four five.",
        "The quick brown fox jumps over the lazy dog.", "0 1 2 3 4 5 6 7 8 9 + - * / = ?",
    ] * 50
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    extra: dict[str, Any] = {}
    if os.environ.get("CRL_TOKENIZER_NO_TTI") == "1":
        extra["model_input_names"] = ["input_ids", "attention_mask"]
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>",
                                     pad_token="<|pad|>", bos_token=None, unk_token=None, **extra)
    hf_tok.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    hf_tok.save_pretrained(out)

    vocab = len(hf_tok)
    cfg = Qwen2Config(vocab_size=((vocab + 63) // 64) * 64, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=1024, tie_word_embeddings=False,
                      eos_token_id=hf_tok.eos_token_id, pad_token_id=hf_tok.pad_token_id,
                      bos_token_id=hf_tok.eos_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.generation_config.eos_token_id = hf_tok.eos_token_id
    model.generation_config.pad_token_id = hf_tok.pad_token_id
    model.save_pretrained(out, safe_serialization=True)
    print("saved", out, "vocab", vocab, "params", sum(p.numel() for p in model.parameters()))
    print(sorted(os.listdir(out)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tiny-qwen2")
