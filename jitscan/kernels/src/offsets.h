/* jitscan offsets: the kernels of a scan by CSR offsets that run beside the scan.
 * Owns no shared memory.
 *
 * js_seg_first, the pre-pass, finds each tile's first segment (segments.h's
 * js_first_segment) for the tiles that do not search for it themselves
 * (JS_SEARCH_SEGMENTS), and checks device offsets where they are; js_check_offsets checks
 * them alone, for the tiles that do.
 */

#if JS_SEG_OFFSETS

/* Device offsets are checked where they are, while the scan runs: a bad offset raises
 * the queue's alarm (backends.Alarm), and the host raises the error (plan/forms.py). The
 * kernels that read offsets stay inside the arrays whatever the offsets hold (the table
 * of first segments comes from a binary search; positions are clamped to the tile where
 * valid offsets always lie), so bad offsets give a wrong result, never a stray access.
 * The word keeps the first offending index s as 0xFFFFFFFF - (4 * s + rule), by atomic
 * max, so that the smallest s wins; the flag is for the host, which reads the word once
 * it sees the flag. Rules: 0 offsets[0] != 0; 1 offsets[s] < offsets[s - 1]; 2
 * offsets[nseg] != n. Indices past JS_OFFSET_INDEX_LIMIT read as it. */
#define JS_OFFSET_INDEX_LIMIT 0x3FFFFFFEu
JS_DEVICE_FN void js_check_offset(JS_GLOBAL const js_size* offsets, js_size s, js_size nseg, js_size n,
                                  JS_GLOBAL js_u32* word, JS_GLOBAL js_u32* flag)
{
    js_size v = offsets[s];
    js_u32 rule = 3u;  /* none broken */
    if (s == 0 && v != 0)
        rule = 0u;
    else if (s > 0 && (offsets[s - 1] > v || v >> 63))  /* (int64 offsets: a negative one is a drop) */
        rule = 1u;
    else if (s == nseg && v != n)
        rule = 2u;
    if (rule < 3u) {
        js_u32 at = s < JS_OFFSET_INDEX_LIMIT ? (js_u32)s : JS_OFFSET_INDEX_LIMIT;
        /* the first to find the word clear raises the flag, with a plain store by one
         * work-item: on CUDA the flag is host memory, where device atomics need not work */
        if (JS_ATOMIC_MAX_U32(word, 0xFFFFFFFFu - (at * 4u + rule)) == 0u)
            *flag = 1u;
    }
}

/* The check alone, for launches without the pre-pass (one-thread tiles search their
 * segments themselves). */
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
