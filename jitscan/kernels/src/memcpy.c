/* jitscan memcpy: the same tile loads and stores with no scan in between. Its speed
 * is the ceiling for every single-pass variant, which moves the same 2n. */

JS_KERNEL void js_memcpy(JS_SRC_PARAMS, JS_DST_PARAMS, js_size n, js_u32 stream)
{
    js_size base = (js_size)JS_GROUP_ID * JS_TILE;
#if JS_LANES
    /* a CPU tile in lanes, as the scans move theirs: vector by vector, no array between,
     * and around the cache where the scans' stores would go around it (JS_STREAM_BIT) */
    if (base + JS_TILE <= n) {
        if (stream) {  /* two loops: see js_lanes_store */
            for (js_u32 j = 0; j < JS_P; ++j)
                JS_VEC_STREAM(JS_VEC_LOAD(JS_SRC_AT + base, j), JS_DST_AT + base, j);
            JS_STREAM_FENCE();  /* see JS_VEC_STREAM in lanes.h */
        } else {
            for (js_u32 j = 0; j < JS_P; ++j)
                JS_VEC_STORE(JS_VEC_LOAD(JS_SRC_AT + base, j), JS_DST_AT + base, j);
        }
        return;
    }
#else
    (void)stream;
#endif
    js_val x[JS_P][JS_V];
    js_load_values(JS_SRC_AT, base, n, x);
    js_store_values(JS_DST_AT, base, n, x);
}
