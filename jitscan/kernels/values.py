"""How values and the arrays they live in are spelled in the kernels' C.

A mixin of :class:`~jitscan.kernels.dialect.Dialect`: the value type ``js_val`` (a
scalar, or a tuple value's struct with its constructor, identity and tile-state words),
and ``js_src`` / ``js_dst``, the arrays a kernel reads and writes (one for a scalar; a
pointer per field read or written for a tuple), with their vector loads and stores and
the field-by-field shuffles of a struct. It uses the dialect's ``ctype``, ``literal``,
``vector_load`` and ``vector_store``.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import INPUTS, VECTOR_BYTES, DType
from .spec import ScanSpec


def _pointer_struct(name: str, macro: str, arg: str, fields: list[tuple[int, str]]) -> list[str]:
    """A struct of one global pointer per field (``(k, element type)``) and how kernels get it:
    ``{macro}_PARAMS`` (a pointer and an element offset per field), ``{macro}_AT`` (the struct,
    offsets applied) and the ``{name}_at`` that makes it."""
    members = " ".join(f"JS_GLOBAL {t}* f{k};" for k, t in fields)
    params = ", ".join(f"JS_GLOBAL {t}* {arg}{k}, js_size {arg}_off{k}" for k, t in fields)
    at = ", ".join(f"{arg}{k} + {arg}_off{k}" for k, _ in fields)
    ptrs = ", ".join(f"JS_GLOBAL {t}* p{k}" for k, t in fields)
    sets = " ".join(f"r.f{k} = p{k};" for k, _ in fields)
    return [
        f"typedef struct {{ {members} }} {name};",
        f"#define {macro}_PARAMS {params}",
        f"#define {macro}_AT {name}_at({at})",
        f"JS_DEVICE_FN {name} {name}_at({ptrs}) {{ {name} r; {sets} return r; }}",
    ]


class ValueSpelling:
    """The value and array part of a dialect (see the module text)."""

    # -- values ----------------------------------------------------------------------
    def scalar_types(self, spec: ScanSpec) -> list[str]:
        """js_val, js_in and js_bits of a scalar value, its identity and parts."""
        dt = spec.dtype_info
        return [
            f"typedef {self.ctype(dt)} js_val;",
            f"typedef {self.ctype(spec.input_info)} js_in;  /* the input's items, converted as loaded */",
            f"typedef {'js_u32' if dt.itemsize == 4 else 'js_u64'} js_bits;",
            f"#define JS_VIDENTITY {self.literal(spec.monoid.identity_for(dt), dt, 'js_val')}",
            f"#define JS_ISNAN(x) {'((x) != (x))' if dt.is_float else '0'}",
            "#define JS_BITS_ZERO ((js_bits)0)",
            "#define JS_BITS_PART(b, p) ((js_sw)((b) >> ((p) * JS_PART_BITS)) & JS_PART_MASK)",
            "#define JS_BITS_SET(b, p, part) ((b) |= (js_bits)(part) << ((p) * JS_PART_BITS))",
        ]

    def record_types(self, spec: ScanSpec) -> list[str]:
        """A tuple value: the struct js_val, its constructor, identity and tile-state words.

        The tile state holds the fields back to back in 32-bit words (js_bits), without
        the struct's padding: padding bits are not the same in every copy of a value,
        and a reader may combine words posted by different workgroups.
        """
        fields = spec.dtype_info.fields
        ident = spec.monoid.identity_for(fields)
        ctypes = [self.ctype(d) for d in fields]
        members = " ".join(f"{c} f{k};" for k, c in enumerate(ctypes))
        params = ", ".join(f"{c} a{k}" for k, c in enumerate(ctypes))
        sets = " ".join(f"r.f{k} = a{k};" for k in range(len(fields)))
        literals = ", ".join(self.literal(v, d, self.ctype(d)) for v, d in zip(ident, fields, strict=True))
        words = spec.dtype_info.packed_bytes // 4
        to_words, from_words, w = [], [], 0
        for k, d in enumerate(fields):
            if d.itemsize == 4:
                to_words.append(f"b.w[{w}] = {self.to_u32(d, f'v.f{k}')};")
                from_words.append(f"r.f{k} = {self.from_u32(d, f'b.w[{w}]')};")
            else:
                u = self.to_u64(d, f"v.f{k}")
                to_words.append(
                    f"{{ js_u64 u = {u}; b.w[{w}] = (js_u32)u; b.w[{w + 1}] = (js_u32)(u >> 32); }}"
                )
                from_words.append(f"r.f{k} = {self.from_u64(d, f'((js_u64)b.w[{w + 1}] << 32 | b.w[{w}])')};")
            w += d.itemsize // 4
        split = spec.tile_state != "packed"
        part = (
            "((js_sw)(((b).w[(p) >> 1] >> (((p) & 1u) * 16u)) & 0xffffu))" if split else "((js_sw)(b).w[p])"
        )
        set_part = (
            "((b).w[(p) >> 1] |= (js_u32)(part) << (((p) & 1u) * 16u))"
            if split
            else "((b).w[p] = (js_u32)(part))"
        )
        return [
            f"/* a tuple value {spec.dtype_info.name}: one struct, an array per field in memory */",
            f"typedef struct {{ {members} }} js_val;",
            "typedef js_val js_in;",
            f"typedef struct {{ js_u32 w[{words}]; }} js_bits;",
            f"JS_DEVICE_FN js_val js_val_of({params}) {{ js_val r; {sets} return r; }}",
            f"#define JS_VIDENTITY js_val_of({literals})",
            "#define JS_ISNAN(x) 0",
            "JS_DEVICE_FN js_bits js_bits_zero(void) { js_bits b; "
            f"for (js_u32 i = 0; i < {words}; ++i) b.w[i] = 0u; return b; }}",
            f"JS_DEVICE_FN js_bits js_val_to_bits(js_val v) {{ js_bits b; {' '.join(to_words)} return b; }}",
            "JS_DEVICE_FN js_val js_val_from_bits(js_bits b) "
            f"{{ js_val r; {' '.join(from_words)} return r; }}",
            "#define JS_TO_BITS(x) js_val_to_bits(x)",
            "#define JS_FROM_BITS(b) js_val_from_bits(b)",
            "#define JS_BITS_ZERO js_bits_zero()",
            f"#define JS_BITS_PART(b, p) {part}",
            f"#define JS_BITS_SET(b, p, part) {set_part}",
        ]

    def to_u32(self, d: DType, x: str) -> str:
        return f"JS_F32_TO_BITS({x})" if d.is_float else f"(js_u32)({x})"

    def from_u32(self, d: DType, b: str) -> str:
        return f"JS_F32_FROM_BITS({b})" if d.is_float else f"({self.ctype(d)})({b})"

    def to_u64(self, d: DType, x: str) -> str:
        return f"JS_F64_TO_BITS({x})" if d.is_float else f"(js_u64)({x})"

    def from_u64(self, d: DType, b: str) -> str:
        return f"JS_F64_FROM_BITS({b})" if d.is_float else f"({self.ctype(d)})({b})"

    # -- arrays in and out -----------------------------------------------------------

    def io(self, spec: ScanSpec) -> list[str]:
        """js_src and js_dst: the arrays a kernel reads and writes, and their accessors.

        A scalar scan reads one array (``js_in`` items, converted as loaded) and writes
        one. A tuple value reads an array per field, except index fields, which are the
        element's position; it writes the fields of ``spec.outputs``, each to its array.
        Kernels take them as JS_SRC_PARAMS / JS_DST_PARAMS (a pointer and an element
        offset each) and make them with JS_SRC_AT / JS_DST_AT.
        """
        if spec.transform is not None:
            v = spec.vector_width
            return spec.transform.c_io(  # type: ignore[attr-defined]
                self.opaque_index(spec),  # type: ignore[attr-defined]
                lambda macro, d: self.field_moves(macro, INPUTS[d], v, self.vector_load),  # type: ignore[attr-defined]
                v,
            )
        if not spec.record:
            return [
                "typedef JS_GLOBAL const js_in* js_src;",
                "typedef JS_GLOBAL js_val* js_dst;",
                "#define JS_SRC_PARAMS JS_GLOBAL const js_in* in_ptr, js_size in_off",
                "#define JS_SRC_AT (in_ptr + in_off)",
                "#define JS_SRC_VLOAD(v, s, base, vi) JS_VLOAD_IN(v, (s) + (base), vi)",
                "#define JS_SRC_ITEM(s, i) ((js_val)(s)[i])",
                "#define JS_DST_PARAMS JS_GLOBAL js_val* out_ptr, js_size out_off",
                "#define JS_DST_AT (out_ptr + out_off)",
                "#define JS_DST_VSTORE(y, d, base, vi) JS_VSTORE(y, (d) + (base), vi)",
                "#define JS_DST_ITEM(d, i, v) ((d)[i] = (v))",
            ]
        fields = spec.dtype_info.fields
        v = spec.vector_width
        loaded = [k for k in range(len(fields)) if k not in spec.index_fields]
        out = list(spec.outputs)
        c = [self.ctype(d) for d in fields]
        lines = [
            *_pointer_struct("js_src", "JS_SRC", "in", [(k, f"const {c[k]}") for k in loaded]),
            *_pointer_struct("js_dst", "JS_DST", "out", [(k, c[k]) for k in out]),
            "/* item i: the loaded fields read, the index fields its position */",
            "JS_DEVICE_FN js_val js_src_item(js_src s, js_size i) { js_val v; "
            + " ".join(
                f"v.f{k} = ({c[k]})i;" if k in spec.index_fields else f"v.f{k} = s.f{k}[i];"
                for k in range(len(fields))
            )
            + " return v; }",
            "#define JS_SRC_ITEM(s, i) js_src_item(s, i)",
            "JS_DEVICE_FN void js_dst_item(js_dst d, js_size i, js_val v) { "
            + " ".join(f"d.f{k}[i] = v.f{k};" for k in out)
            + " }",
            "#define JS_DST_ITEM(d, i, v) js_dst_item(d, i, v)",
        ]
        loads, stores = [], []
        for k in range(len(fields)):
            if k in spec.index_fields:
                at = "(base) + (js_size)(vi) * JS_V + _e"
                loads.append(f"for (js_u32 _e = 0; _e < JS_V; ++_e) (v)[_e].f{k} = ({c[k]})({at});")
            else:
                lines += self.field_moves(f"JS_VLOAD_F{k}", fields[k], v, self.vector_load)
                loads.append(
                    f"{{ {c[k]} _f[JS_V]; JS_VLOAD_F{k}(_f, (s).f{k} + (base), vi); "
                    f"for (js_u32 _e = 0; _e < JS_V; ++_e) (v)[_e].f{k} = _f[_e]; }}"
                )
            if k in out:
                lines += self.field_moves(f"JS_VSTORE_F{k}", fields[k], v, self.vector_store)
                stores.append(
                    f"{{ {c[k]} _f[JS_V]; for (js_u32 _e = 0; _e < JS_V; ++_e) _f[_e] = (y)[_e].f{k}; "
                    f"JS_VSTORE_F{k}(_f, (d).f{k} + (base), vi); }}"
                )
        lines.append(f"#define JS_SRC_VLOAD(v, s, base, vi) do {{ {' '.join(loads)} }} while (0)")
        lines.append(f"#define JS_DST_VSTORE(y, d, base, vi) do {{ {' '.join(stores)} }} while (0)")
        return lines

    def field_moves(self, macro: str, d: DType, width: int, move: Any) -> list[str]:
        """A tuple field's vector load or store (``move``) of ``width`` items, as 16-byte pieces.

        The vector width of a tuple value is set by its narrowest moved field, so a wider
        field's vector spans several of the 16-byte accesses the arrays are aligned for.
        """
        piece = max(1, VECTOR_BYTES // d.itemsize)
        if width <= piece:
            return [move(macro, d, width)]
        k = width // piece
        pieces = " ".join(f"{macro}_PIECE((a) + {c * piece}, ptr, (vi) * {k} + {c});" for c in range(k))
        return [move(f"{macro}_PIECE", d, piece), f"#define {macro}(a, ptr, vi) do {{ {pieces} }} while (0)"]

    def element_moves(self) -> str:
        """JS_VLOAD / JS_VSTORE of a tuple value's struct (the spine of reduce-then-scan): item by item."""
        return (
            "#define JS_VLOAD(dst, ptr, vi) do { for (js_u32 _e = 0; _e < JS_V; ++_e) "
            "(dst)[_e] = (ptr)[(vi) * JS_V + _e]; } while (0)\n"
            "#define JS_VSTORE(src, ptr, vi) do { for (js_u32 _e = 0; _e < JS_V; ++_e) "
            "(ptr)[(vi) * JS_V + _e] = (src)[_e]; } while (0)"
        )

    def field_shuffles(self, spec: ScanSpec) -> str:
        """JS_SHFL_UP_V / JS_SHFL_IDX_V of a tuple value: field by field (after the prelude's)."""
        fields = spec.dtype_info.fields
        out = []
        for name, macro in (("up", "JS_SHFL_UP_FIELD"), ("idx", "JS_SHFL_IDX_FIELD")):
            sets = " ".join(
                f"r.f{k} = {self.shuffle_field(macro, d, f'x.f{k}')};" for k, d in enumerate(fields)
            )
            out.append(
                f"JS_DEVICE_FN js_val js_shfl_{name}_val(js_val x, js_u32 d) {{ js_val r; {sets} return r; }}"
            )
        out += [
            "#undef JS_SHFL_UP_V",
            "#undef JS_SHFL_IDX_V",
            "#define JS_SHFL_UP_V(x, d) js_shfl_up_val(x, d)",
            "#define JS_SHFL_IDX_V(x, s) js_shfl_idx_val(x, s)",
        ]
        return "\n".join(out) + "\n"

    def shuffle_field(self, macro: str, d: DType, x: str) -> str:
        """One field shuffled (``macro(x, d)`` moves 32 bits, or any type where overloaded)."""
        return f"{macro}({x}, d)"
