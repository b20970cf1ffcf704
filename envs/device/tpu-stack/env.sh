# Source after unpack.sh: the carried Python 3.12 and its packages replace the machine's own for
# this shell (its PYTHONPATH, which may hold another JAX, is set aside).
#   source envs/device/tpu-stack/env.sh [PREFIX]      (default PREFIX: /tmp/tpu-stack)
TPU_STACK=${1:-${TPU_STACK:-/tmp/tpu-stack}}
export TPU_STACK
export PYTHONHOME=$TPU_STACK/py312
export PYTHONPATH=$TPU_STACK/site
export LD_LIBRARY_PATH=$TPU_STACK/py312/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TPU_LIBRARY_PATH=$TPU_STACK/site/libtpu/libtpu.so
export PATH=$TPU_STACK/py312/bin:$PATH
