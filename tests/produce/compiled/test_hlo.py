"""Reading compiled HLO text: the bytes of its arrays, and host offload (a trimmed excerpt of a real
GB200 compile)."""

from __future__ import annotations

import pytest

from offload_repro.produce.compiled.hlo_text import array_bytes, device_shape_bytes, parse_dims, shape_bytes
from offload_repro.produce.compiled.host_offload_hlo import canonical, summarize_hlo

# Lines of real compiled HLO, long by nature.
EXCERPT = """
  %custom-call.21 = bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)} custom-call(), custom_call_target="AllocateBuffer"
  %custom-call.22 = bf16[126,2,8192,8,128]{4,3,2,1,0:S(5)} custom-call(), custom_call_target="AllocateBuffer"
  %custom-call.23 = bf16[126,2,8192,8,128]{4,3,2,1,0:S(5)} custom-call(), custom_call_target="AllocateBuffer"
  %custom-call.24 = bf16[2,8192]{1,0} custom-call(), custom_call_target="AllocateBuffer"
  ROOT %dynamic-update-slice.19.1 = bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)} dynamic-update-slice(%p0, %p1)
  %dynamic-update-slice-start.3 = ((bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)}, s32[]), bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)}, u32[]) fusion-start(%a, %b)
  %dynamic-update-slice-done.3 = bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)} fusion-done(%dynamic-update-slice-start.3)
  %dynamic-slice-start.3 = ((bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)}, s32[]), bf16[1,2,8192,128,128]{4,3,2,1,0}, u32[]) fusion-start(%c, %d)
  %all-gather-start.1 = (f32[1,128]{1,0}, f32[128,128]{1,0}) all-gather-start(%e), replica_groups={}
  %all-gather-done.1 = f32[128,128]{1,0} all-gather-done(%all-gather-start.1)
"""


def test_host_buffers_are_counted_with_their_bytes_and_async_pairs_by_kind():
    summary = summarize_hlo(EXCERPT)
    assert summary["host_buffers"] == 3  # the device-memory AllocateBuffer is not a host buffer
    assert summary["host_buffer_bytes"] == 126 * 576 * 1024**2  # 70.875 GiB
    assert summary["host_write_instructions"] == 2
    assert summary["host_read_instructions"] == 1
    assert summary["async_pairs"] == {"all-gather-start": 1, "fusion-start": 2}
    assert summary["async_pairs_total"] == 3


def test_a_shapes_bytes_are_all_its_arrays_and_its_device_bytes_those_not_in_host_memory():
    assert array_bytes("bf16", parse_dims("2,8192,128,128")) == 512 * 1024**2
    assert array_bytes("f32", parse_dims("")) == 4
    shape = "(bf16[126,2,8192]{2,1,0:S(5)}, f32[2,8192]{1,0}, s32[], token[])"
    assert shape_bytes(shape) == 2 * 126 * 2 * 8192 + 4 * 2 * 8192 + 4  # a token has no bytes
    assert device_shape_bytes(shape) == 4 * 2 * 8192 + 4


def test_a_host_buffer_of_an_element_type_of_unknown_size_is_refused():
    unknown = '  %custom-call.1 = s4[8,128]{1,0:S(5)} custom-call(), custom_call_target="AllocateBuffer"'
    with pytest.raises(KeyError, match="s4"):
        summarize_hlo(unknown)


def test_digest_ignores_debug_information_but_not_the_program():
    header = 'HloModule jit_train_step, is_scheduled=true\n\nFileNames\n1 "/a/caller.py"\n\nStackFrames\n1 {x}\n\n'
    body = '%f (p: f32[2]) -> f32[2] {\n  %a = f32[2]{0} add(%p, %p), metadata={op_name="x" source_line=%d}\n}\n'
    one = canonical(header + body.replace("%d", "10"))
    moved = canonical(header.replace("caller.py", "other.py") + body.replace("%d", "99"))
    changed = canonical(header + body.replace("add", "multiply").replace("%d", "10"))
    assert one == moved and one != changed
    assert "metadata" not in one and "caller.py" not in one
