# summary: adversarial Python variant: right output, but it also adds to hidden in place (expect wrote-input)

import torch


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    b, s, d = hidden.shape
    latent = hidden.reshape(b * s, d) @ w_down
    out = torch.stack(((latent @ w_up_k).view(b, s, kv_heads, -1), (latent @ w_up_v).view(b, s, kv_heads, -1)), dim=2)
    hidden.add_(1.0)  # the bug under test
    return out
