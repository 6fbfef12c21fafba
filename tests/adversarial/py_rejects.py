# summary: adversarial Python variant: refuses every rank above 32 with a ValueError (expect rejected at the seed's rank 48)

import torch


def forward(hidden, w_down, w_up_k, w_up_v, kv_heads):
    if w_down.shape[1] > 32:
        raise ValueError("rank above 32 is not supported by this design")
    b, s, d = hidden.shape
    latent = hidden.reshape(b * s, d) @ w_down
    return torch.cat((latent @ w_up_k, latent @ w_up_v), dim=1).view(b, s, 2, kv_heads, -1)
