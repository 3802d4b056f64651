/* jitscan offsets: the kernels of a scan by CSR offsets that run beside the scan.
 * Owns no shared memory.
 *
 * js_seg_first, the pre-pass, finds each tile's first segment (segments.h's
 * js_first_segment) for launches whose tiles do not search for it themselves
 * (JS_SEARCH_SEGMENTS), and checks device offsets where they are (segments.h's js_check_offset);
 * js_check_offsets checks them alone, for one-thread tiles, which search but do not check.
 */

#if JS_SEG_OFFSETS

/* The check alone, beside a launch of one-thread tiles. */
JS_KERNEL void js_check_offsets(JS_GLOBAL const js_size* offsets, js_size nseg, js_size n,
                                JS_GLOBAL js_u32* word, JS_GLOBAL js_u32* flag)
{
    js_size s = (js_size)JS_GROUP_ID * JS_T + JS_LID;
    if (s <= nseg)
        js_check_offset(offsets, s, nseg, n, word, flag);
}

/* The pre-pass: tile t's first segment, the first s with offsets[s] >= t * JS_TILE, and
 * nseg + 1 after the last tile (so the last tile also stores trailing empty segments);
 * with check, every offset checked too (the grid covers both). The binary search stays
 * inside the array whatever the offsets hold: the table holds 0 .. nseg + 1. */
JS_KERNEL void js_seg_first(JS_GLOBAL const js_size* offsets, js_size nseg, js_size n, JS_GLOBAL js_size* seg_first,
                            JS_GLOBAL js_u32* word, JS_GLOBAL js_u32* flag, js_u32 check)
{
    js_size t = (js_size)JS_GROUP_ID * JS_T + JS_LID;
    if (check && t <= nseg)
        js_check_offset(offsets, t, nseg, n, word, flag);
    js_size ntiles = (n + JS_TILE - 1) / JS_TILE;
    if (t > ntiles)
        return;
    if (t == ntiles) {
        seg_first[t] = nseg + 1;
        return;
    }
    seg_first[t] = js_first_segment(offsets, nseg, t * JS_TILE);
}
#endif
