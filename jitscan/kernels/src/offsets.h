/* jitscan offsets: the kernels of a scan by CSR offsets that run beside the scan.
 * Owns no shared memory.
 *
 * js_check_offsets checks device offsets where they are; js_seg_first, the pre-pass,
 * finds each tile's first segment (segments.h's js_first_segment) for the tiles that do
 * not search for it themselves (JS_SEARCH_SEGMENTS).
 */

#if JS_SEG_OFFSETS

/* Device offsets are checked where they are: *bad is set when they do not start at 0,
 * end at n, or decrease somewhere (the host then finds the first bad index). */
JS_KERNEL void js_check_offsets(JS_GLOBAL const js_size* offsets, js_size nseg, js_size n, JS_GLOBAL js_u32* bad)
{
    js_size s = (js_size)JS_GROUP_ID * JS_T + JS_LID;
    if (s > nseg)
        return;
    js_size v = offsets[s];
    int ok = s == 0 ? v == 0 : offsets[s - 1] <= v;
    if (s == nseg && v != n)
        ok = 0;
    if (!ok)
        JS_ATOMIC_MAX_U32(bad, 1u);
}

/* Tile t's first segment: the first s with offsets[s] >= t * JS_TILE, and nseg + 1
 * after the last tile (so the last tile also stores trailing empty segments). */
JS_KERNEL void js_seg_first(JS_GLOBAL const js_size* offsets, js_size nseg, js_size n, JS_GLOBAL js_size* seg_first)
{
    js_size t = (js_size)JS_GROUP_ID * JS_T + JS_LID;
    js_size ntiles = (n + JS_TILE - 1) / JS_TILE;
    if (t > ntiles)
        return;
    if (t == ntiles) {
        seg_first[t] = nseg + 1;
        return;
    }
    seg_first[t] = js_first_segment(offsets, nseg, t * JS_TILE);  /* offsets[nseg] == n > t * JS_TILE */
}
#endif
