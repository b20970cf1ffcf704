"""An array as XLA prints it in HLO text and in a profile's op names: its element type, its
dimensions and a layout, whose memory space 5 is host memory (`bf16[8,2,8192,16,128]{4,2,3,1,0:S(5)}`).
Read by the compiled program's reader and by the profile's, each on its own floor."""

from __future__ import annotations

import re

ELEMENT_BYTES = {
    **dict.fromkeys(("pred", "s8", "u8", "f8e4m3fn", "f8e5m2"), 1),
    **dict.fromkeys(("s16", "u16", "f16", "bf16"), 2),
    **dict.fromkeys(("s32", "u32", "f32"), 4),
    **dict.fromkeys(("s64", "u64", "f64"), 8),
}
HOST_MEMORY = "S(5)"  # the layout's memory space of an array in host memory
ARRAY = re.compile(r"(\w+)\[([\d,]*)\](\{[^}]*\})?")  # element type, dimensions, layout
