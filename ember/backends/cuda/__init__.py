"""The CUDA backend's first slice: a scheduling `Target` for an NVIDIA GPU, the
renderer of the kernel IR to CUDA C and an NVRTC compile check.  Nothing here
imports CuPy or cuda.bindings at import time; launching is not built yet
(ARCHITECTURE.md, "backends/cuda")."""
