// summary: adversarial: names torch's API but includes no header, as if load_inline still added torch/types.h (expect build-failed with a hint)

at::Tensor forward(at::Tensor hidden, at::Tensor w_down, at::Tensor w_up_k, at::Tensor w_up_v, int64_t kv_heads) {
  return at::empty({hidden.size(0), hidden.size(1), 2, kv_heads, w_up_k.size(1) / kv_heads}, hidden.options());
}
