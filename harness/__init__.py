"""KV-decompression benchmark harness: discover -> build -> check -> time -> report -> compare."""
