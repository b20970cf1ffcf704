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


def test_a_loop_state_value_counts_where_it_is_live():
    """Lines copied from the dump of deepseek-offload-plain compiled for GB200: the forward loop's
    stack of saved layer inputs is a phi value (XLA's name for a loop's state), 25.38 GiB live from
    the forward loop to the backward one. Reading it is what makes the most live at once equal the
    temp allocation (105.90 GiB both) rather than 46 GiB short of it."""
    assignment = (
        "allocation 714: size 113712747608, page 0, preallocated-temp:\n"
        " value: <9201 while.606{3} (phi) @0> (size=27246198784,offset=0): bf16[58,8,4096,7168]{3,2,1,0}\n"
    )
    assert peak_buffers.temp_values(assignment) == {"while.606{3}": (0, 27246198784, "bf16[58,8,4096,7168]{3,2,1,0}")}
    assert peak_buffers.RANGE.match("    while.606{3}:601-1230").groups() == ("while.606", "{3}", "601", "1230")
