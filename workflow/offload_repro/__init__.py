"""offload-repro: reproduce NVIDIA's JAX activation host-offloading results with MaxText."""
