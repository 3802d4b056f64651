/* jitscan reduce-then-scan: three launches and about 3n of traffic, but no
 * workgroup ever waits on another, so it needs no forward-progress guarantee. */

/* The tile kernels' shared memory: the tile's scan, and where segments start by offsets. */
typedef struct {
    js_scan_storage scan;        /* scan.h */
#if JS_SEG_OFFSETS
    js_seg_storage seg;          /* segments.h */
#endif
} js_rts_storage;
JS_STATIC_ASSERT(js_rts_storage_size, sizeof(js_rts_storage) == JS_RTS_STORAGE_BYTES);

/* 1. every tile's aggregate into the spine.
 *    A segmented reduction by offsets (JS_SEG_STAGE) reads the data only here: every
 *    tile also stores the totals of the segments it holds whole, and the local total
 *    of a segment it continues into carry; after the spine scan, js_rts_seg_fixup
 *    completes those segments with their tiles' prefixes. */
JS_KERNEL void js_rts_reduce(JS_SRC_PARAMS, js_size n, JS_GLOBAL T* spine
#if JS_SEG_STAGE
                             , JS_DST_PARAMS, JS_GLOBAL js_val* carry
#endif
                             JS_SEG_PARAMS)
{
    JS_LOCAL_DECL js_rts_storage sh;
    js_u32 tile = JS_GROUP_ID;
    js_size base = (js_size)tile * JS_TILE;
#if JS_LANE_TOTALS && JS_LANES
    /* a CPU's one-thread tile: each segment's part summed directly (lanes.h) */
    spine[tile] = js_lanes_seg_totals(JS_SRC_AT, JS_DST_AT, base, n, carry JS_SEG_LOAD_ARGS);
#else
    js_val x[JS_P][JS_V];
    T left[JS_P];
    js_heads own;
    T agg = js_load_scan(JS_SRC_AT, base, n, x, left, &own, &sh.scan JS_SEG_LOAD_ARGS);
    if (JS_LID == 0)
        spine[tile] = agg;
#if JS_SEG_STAGE
    js_store_segment_totals(JS_DST_AT, base, n, x, left, JS_IDENTITY, 0, own, carry JS_SEG_LOAD_ARGS);
#endif
#endif
}

/* 2. one workgroup turns the spine into exclusive prefixes, a tile of it at a time;
 *    for a plain reduction the grand total goes to out[0] instead. Alone on the
 *    device, it has no occupancy to protect, so it is not held to the tile kernels'
 *    register budget (JS_KERNEL_SINGLE; under it the segmented spine spilled). */
JS_KERNEL_SINGLE void js_rts_spine(JS_GLOBAL T* spine, js_size ntiles, JS_DST_PARAMS, js_u32 kind)
{
    JS_LOCAL_DECL js_scan_storage sh;
    T run = JS_IDENTITY;
    int have = 0;
    for (js_size base = 0; base < ntiles; base += JS_TILE) {
        T p[JS_P][JS_V], left[JS_P];
        js_val x[JS_P][JS_V];
        js_load_tile(spine, base, ntiles, p);
        js_heads heads = js_split(p, x);
        T agg = js_scan_tile(x, left, heads, &sh);
        /* a segmented reduction still needs every tile's prefix (js_rts_seg_fixup) */
        if (kind != JS_KIND_REDUCE || JS_SEG_OFFSETS) {
            /* exclusive prefixes, in place: the spine holds (head, value) pairs when
             * segmented, so this stores whole T, not values */
            T y[JS_P][JS_V];
JS_UNROLL
            for (js_u32 j = 0; j < JS_P; ++j) {
                T l = have ? js_op(run, left[j]) : left[j];
                y[j][0] = l;
#pragma unroll
                for (js_u32 e = 1; e < JS_V; ++e)
                    y[j][e] = js_op(l, JS_LIFT(JS_SEEN(heads, j, e - 1), x[j][e - 1]));
            }
            js_store_tile(spine, base, ntiles, y);
        }
        run = have ? js_op(run, agg) : agg;
        have = 1;
    }
    /* a reduction by offsets stored its totals per segment (js_rts_seg_fixup). A
     * preprocessor test, not a constant operand of &&, which clang warns about */
#if !JS_SEG_OFFSETS
    if (kind == JS_KIND_REDUCE && JS_LID == 0)
        JS_DST_ITEM(JS_DST_AT, 0, JS_TOTAL(JS_VALUE_OF(run)));
#endif
}

/* 3. every tile scanned again, seeded with its prefix from the spine */
JS_KERNEL void js_rts_scan(JS_SRC_PARAMS, JS_DST_PARAMS, js_size n, JS_GLOBAL const T* spine, js_u32 kind
                           JS_SEG_PARAMS)
{
    JS_LOCAL_DECL js_rts_storage sh;
    js_u32 tile = JS_GROUP_ID;
    js_size base = (js_size)tile * JS_TILE;
    js_val x[JS_P][JS_V];
    T left[JS_P];
    js_heads own;
    js_load_scan(JS_SRC_AT, base, n, x, left, &own, &sh.scan JS_SEG_LOAD_ARGS);
    js_store_output(JS_DST_AT, base, n, x, left, spine[tile], tile > 0, kind == JS_KIND_EXCLUSIVE, own);
}

#if JS_SEG_STAGE
/* one thread per tile: the segment continued into tile t ends there (seg_first[t] <
 * seg_first[t + 1]); its total is the tile's exclusive prefix combined with the carry */
JS_KERNEL void js_rts_seg_fixup(JS_GLOBAL const T* spine, JS_GLOBAL const js_val* carry, JS_DST_PARAMS,
                                js_size ntiles, JS_GLOBAL const js_size* seg_first)
{
    js_size t = (js_size)JS_GROUP_ID * JS_T + JS_LID;
    if (t == 0 || t >= ntiles)
        return;
    js_size lo = seg_first[t];  /* >= 1: offsets[0] == 0 lies before tile t (not so for bad ones) */
    if (lo >= 1 && lo < seg_first[t + 1])
        JS_DST_ITEM(JS_DST_AT, lo - 1, js_vop(JS_VALUE_OF(spine[t]), carry[t]));
}
#endif
