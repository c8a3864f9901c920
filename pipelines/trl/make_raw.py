"""Writes raw/ of the TRL example with transformers' own TrainerState: `python make_raw.py [DIR]`
(default: raw/ beside this file, replaced).

A TRL trainer (GRPOTrainer here) is a transformers Trainer: each `log()` call appends the values
logged, with the `epoch` and the `step`, to `state.log_history`, and the Trainer writes the state
with `TrainerState.save_to_json` into `checkpoint-<step>/trainer_state.json` at each save and into
the output folder with `save_state()` at the end. Training needs torch and a model, too large for
the test environment: the state is filled here as the Trainer fills it, with values of the keys
TRL's GRPOTrainer logs (a subset), for two runs of a learning-rate sweep. One logged gradient norm
is NaN, which Python's json writes as a bare `NaN`.

Beside each state, a checkpoint holds what the Trainer saves of the model: a LoRA adapter (its
`adapter_config.json` as PEFT writes it, its weights with safetensors), the model's configuration
and generation settings, and the tokenizer, each written by transformers' `save_pretrained` (a
tiny model and tokenizer stand in for a real one). None of them is results: `runpack init` leaves
them out. The output folder also holds the end of training's metrics as `Trainer.save_metrics`
writes them: `train_results.json`, and `all_results.json`, the union of the splits saved.
"""

import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config
from transformers.trainer_callback import TrainerState

HERE = Path(__file__).resolve().parent
MAX_STEPS = 20
LOGGING_STEPS = 5
SAVE_STEPS = 10


def grpo_logs(lr, step):
    """The values a GRPOTrainer logs at `step` (deterministic stand-ins for a run's)."""
    accuracy = round(0.2 + 0.5 * (1 - math.exp(-step * lr * 5e4)), 4)
    return {
        "loss": round(0.01 * math.cos(step), 6),
        "grad_norm": float("nan") if (lr, step) == (3e-06, 15) else round(0.5 + 0.1 * math.sin(step), 6),
        "learning_rate": lr * (1 - (step - 1) / MAX_STEPS),
        "num_tokens": 4096.0 * step,
        "completions/mean_length": 180.0 + step,
        "completions/clipped_ratio": 0.0,
        "rewards/accuracy_reward/mean": accuracy,
        "rewards/accuracy_reward/std": 0.25,
        "reward": accuracy,
        "reward_std": 0.25,
        "frac_reward_zero_std": 0.125,
        "kl": round(0.001 * step * lr * 1e6, 6),
        "entropy": round(0.9 - 0.01 * step, 6),
        "clip_ratio/region_mean": 0.0,
    }


def save_model(out):
    """What the Trainer saves of a LoRA-trained model into `out` beside its state."""
    out.mkdir(parents=True, exist_ok=True)
    adapter = {
        "base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct",
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": 8,
        "lora_alpha": 16,
        "lora_dropout": 0.05,
        "target_modules": ["q_proj", "v_proj"],
    }
    (out / "adapter_config.json").write_text(json.dumps(adapter, indent=2, sort_keys=True) + "\n")
    save_file({"base_model.model.lm_head.lora_A.weight": np.zeros((8, 16), dtype=np.float32)}, str(out / "adapter_model.safetensors"))
    config = Qwen2Config(vocab_size=3, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, bos_token_id=0, eos_token_id=0)
    config.save_pretrained(out)
    GenerationConfig(bos_token_id=0, eos_token_id=0, max_new_tokens=256, temperature=0.7, do_sample=True).save_pretrained(out)
    tokenizer = Tokenizer(models.WordLevel({"<|endoftext|>": 0, "yes": 1, "no": 2}, unk_token="<|endoftext|>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", pad_token="<|endoftext|>").save_pretrained(out)


def run(out, lr):
    state = TrainerState(
        epoch=0.0,
        global_step=0,
        max_steps=MAX_STEPS,
        logging_steps=LOGGING_STEPS,
        eval_steps=SAVE_STEPS,
        save_steps=SAVE_STEPS,
        num_train_epochs=1,
        train_batch_size=8,
    )
    for step in range(1, MAX_STEPS + 1):
        state.global_step = step
        state.epoch = step / MAX_STEPS
        if step % LOGGING_STEPS == 0:
            # Trainer.log: the values, then the epoch, then the step
            state.log_history.append({**grpo_logs(lr, step), "epoch": state.epoch, "step": step})
        if step % SAVE_STEPS == 0:
            ckpt = out / f"checkpoint-{step}"
            ckpt.mkdir(parents=True)
            state.save_to_json(str(ckpt / "trainer_state.json"))
            save_model(ckpt)
    # the end of Trainer.train: its speed metrics logged once, then save_state()
    state.log_history.append(
        {
            "train_runtime": 612.5,
            "train_samples_per_second": 0.261,
            "train_steps_per_second": 0.033,
            "total_flos": 0.0,
            "train_loss": 0.002,
            "epoch": state.epoch,
            "step": state.global_step,
        }
    )
    # Trainer.save_metrics("train", …): the split's file and all_results.json, the union of
    # the splits saved (json.dump with indent=4 and sorted keys, as the Trainer writes them)
    train = {k: v for k, v in state.log_history[-1].items() if k != "step"}
    for name in ("train_results.json", "all_results.json"):
        (out / name).write_text(json.dumps(train, indent=4, sort_keys=True) + "\n")
    state.save_to_json(str(out / "trainer_state.json"))
    save_model(out)


def main():
    raw = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "raw"
    if raw.exists():
        shutil.rmtree(raw)
    for lr in (1e-06, 3e-06):
        run(raw / f"grpo-lr{lr:.0e}", lr)


if __name__ == "__main__":
    main()
