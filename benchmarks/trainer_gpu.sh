#!/usr/bin/env bash
# The trainer on one GPU, in one call: a random Qwen2.5-0.5B-shaped model (494M parameters,
# built from a config with the embedded model's tokenizer; the embedded weights ship in a
# package too large to carry to the GPU machine) trained with the token-target reward, once
# per weight-sync mode and per learner size, so that the GPU path (NCCL process group, FSDP2 over
# several GPUs, bf16 compute, policy server on cuda, safetensors / gRPC-stream sync) runs end to
# end and its step time is measured.
#   . benchmarks/gpu_setup.sh && bash benchmarks/trainer_gpu.sh OUT_DIR TOKENIZER_DIR
# Environment: SYNCS (default "shared_path grpc_stream"), RANKS (learner processes, one per GPU,
# default "1"; "1 2" runs each config on one GPU and then under torchrun on two, same seed),
# STEPS (default 4), SECONDS_PER_RUN (default 240).
set -uo pipefail
out=${1:?usage: trainer_gpu.sh OUT_DIR TOKENIZER_DIR}; tokenizer=${2:?}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/env.txt"
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$out/env.txt"
[ -f /tmp/model-0.5b/config.json ] || python3 - "$tokenizer" /tmp/model-0.5b <<'PY'
import sys
import torch
from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                     num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                     tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     pad_token_id=tokenizer.pad_token_id)
torch.manual_seed(0)
model = Qwen2ForCausalLM(config)
model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
model.save_pretrained(sys.argv[2]); tokenizer.save_pretrained(sys.argv[2])
print("model", sum(p.numel() for p in model.parameters()) / 1e6, "M parameters")
PY
for sync in ${SYNCS:-shared_path grpc_stream}; do
  cat > "$out/$sync.yaml" <<YAML
name: gpu-$sync
steps: ${STEPS:-4}
model: /tmp/model-0.5b
tasks: {train: [l1_relu, l1_gelu, l1_swish, l1_softmax]}
environment: {kind: token_target, target_token_ids: [$(python3 -c "print(','.join(str(i) for i in range(0, 49152, 4)))")]}
rollout: {tasks_per_step: 4, samples_per_task: 8, turns: 2, max_tokens: 64, device: cuda}
optim: {lr: 1.0e-5, micro_batch_rows: 16}
sync: {mode: $sync}
checkpoint: {every_steps: 4, export_hf: true}
YAML
  for ranks in ${RANKS:-1}; do
    launcher=(python3)
    (( ranks > 1 )) && launcher=(python3 -m torch.distributed.run --standalone "--nproc-per-node=$ranks")
    timeout "${SECONDS_PER_RUN:-240}" "${launcher[@]}" -m drkernel train --config "$out/$sync.yaml" \
      --out "$out/run-$sync-$ranks" 2> "$out/$sync-$ranks.log"
    echo "train ($sync, $ranks rank(s)) exit $?"; tail -2 "$out/$sync-$ranks.log"
  done
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
keys = ("reward_mean", "update_loss", "update_grad_norm", "logprob_mismatch", "mrs_rejected_rate", "seconds_step",
        "seconds_rollouts", "seconds_logprobs", "seconds_updating", "seconds_syncing", "sync_bytes")
for run in sorted(Path(sys.argv[1]).glob("run-*")):
    print(f"== {run.name}")
    print("step " + " ".join(f"{k[:16]:>16}" for k in keys))
    for line in (run / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        print(f"{r['step']:>4} " + " ".join(f"{r.get(k, float('nan')):>16.4g}" for k in keys))
PY
