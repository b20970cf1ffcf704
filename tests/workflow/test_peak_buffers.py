"""workflow/scripts/peak_buffers.py on XLA's own dump of a compiled program (tests/fixtures/peak_buffers:
the buffer assignment and live ranges as XLA wrote them, and the optimized HLO's lines that name the
temp buffers), a tiled grouped matmul's gradient compiled for GB200 with no GPU."""

from __future__ import annotations

import importlib.util

from conftest import FIXTURES, REPO

spec = importlib.util.spec_from_file_location("peak_buffers", REPO / "workflow/scripts/peak_buffers.py")
peak_buffers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peak_buffers)


def test_the_most_live_at_once_fits_the_temp_allocation_xla_laid_it_out_in():
    """No set of buffers live at once can exceed the allocation holding them; in this small program
    XLA packs them with no gap but its alignments, so the two agree within 0.1%."""
    found = peak_buffers.device_peak(FIXTURES / "peak_buffers")
    assert found["temp_allocation_bytes"] == 25_693_256  # memory_analysis().temp_size_in_bytes: 24.50 MiB
    assert 0.999 * found["temp_allocation_bytes"] <= found["live_bytes"] <= found["temp_allocation_bytes"]
    largest = found["live"][0]
    # the product's gradient, 4,096 sorted tokens x 2,048 in bf16, made by the loss's transpose
    assert (largest["shape"], largest["bytes"]) == ("bf16[4096,2048]{1,0}", 4096 * 2048 * 2)
    assert any("tiled_gmm" in buffer["scope"] for buffer in found["live"])
