"""Session 34: tests/observed/test_replay.py::test_the_joint_graph_is_emulated_as_compiled_one_graph on the
device's torch (2.11, CPU Inductor): the pointwise buffers the emulation misses, with their kernels' code."""
import torch, transformers
from roundoff.capture import capture
from roundoff.observed import observe_compiled

torch.manual_seed(0)
config = transformers.LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=1,
                                  num_attention_heads=1, num_key_value_heads=1, vocab_size=512,
                                  max_position_embeddings=64, attn_implementation="eager")
model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).train()
ids = torch.randint(0, 512, (1, 16), generator=torch.Generator().manual_seed(0))
program = capture(lambda ids: model(input_ids=ids, labels=ids).loss, ids, backward=True)
r = observe_compiled(program, repeats=1)
for k in r.kernels:
    if not k.emulated_identical:
        print(k.kind, k.kernel, k.buffer, k.node_id, k.op, k.fused_ops, k.fused_ids, k.emulated_mismatch, k.cause)
src = r.source
for k in r.kernels:
    if k.kind == "pointwise" and k.emulated_mismatch:
        i = src.find(k.kernel + " = ")
        print(src[i:i + 6000])
        j = src.find(k.kernel + "(")
        print(src[j - 1500:j + 300])
        break
