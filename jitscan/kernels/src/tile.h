/* jitscan tile: its shape, and the loads and stores of a tile held in registers.
 * Owns no shared memory.
 *
 * A tile is JS_T threads x JS_P vectors x JS_V items. Threads form subgroups of
 * JS_SG lanes. Vector j of lane l in subgroup s is vector s*(JS_P*JS_SG) + j*JS_SG + l
 * of the tile: a subgroup owns one contiguous stretch, and within it each row j
 * is read by one coalesced load across the lanes.
 *
 * Two kinds of arrays pass through a tile: scanned elements T, whole (the spine of
 * reduce-then-scan: js_load_tile, js_store_tile), and the input and output arrays,
 * whose items are converted to values (js_val) as they load (js_load_vector and the
 * rest). How a tile is scanned is scan.h's; its heads, segments.h's.
 */

#define JS_TILE (JS_T * JS_P * JS_V)
#define JS_NSG (JS_T / JS_SG)

JS_DEVICE_FN js_size js_vec_index(js_u32 j)
{
    return (js_size)JS_SG_ID * (JS_P * JS_SG) + (js_size)j * JS_SG + JS_LANE;
}

/* Out-of-range items read as the identity, so a partial tile scans like a full one. */
JS_DEVICE_FN void js_load_tile(JS_GLOBAL const T* in, js_size base, js_size n, T x[JS_P][JS_V])
{
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            JS_VLOAD_T(x[j], in + base, js_vec_index(j));
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                x[j][e] = (first + e < n) ? in[first + e] : JS_IDENTITY;
        }
    }
}

JS_DEVICE_FN void js_store_tile(JS_GLOBAL T* out, js_size base, js_size n, T y[JS_P][JS_V])
{
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            JS_VSTORE_T(y[j], out + base, js_vec_index(j));
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e < n)
                    out[first + e] = y[j][e];
        }
    }
}

/* The input and output arrays: values in, values out. */

#if JS_DST_OWN && JS_T > 1
/* A transform's tile of its elements' reads and items (kernels/transform.py): every read
 * first, in one block (as vectors without a check where the tile is `whole`), then the
 * items, so that the loads are in flight together; a vector's loads and items in turn
 * would wait for each vector's loads before the next's. */
JS_DEVICE_FN void js_own_tile(js_src in, js_size base, int whole, js_own own[JS_P][JS_V])
{
    if (whole) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            js_own_fast(in, base + js_vec_index(j) * JS_V, own[j]);
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            js_own_checked(in, base + js_vec_index(j) * JS_V, own[j]);
    }
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            own[j][e].item = js_item_of(in, first + e, own[j][e], own[j][e ? e - 1 : 0], e > 0);
    }
}
#endif

#if JS_DST_OWN && JS_T == 1 && JS_SERIAL
/* A transform's one-pass tile (a serial device, its prefix known when it starts): each
 * element's reads and item, its scan and its rules in one pass. The two-pass tile writes
 * its scan to an array in memory and reads it back, reading every element twice. Returns
 * the inclusive prefix past the tile, which it posts. */
JS_DEVICE_FN js_val js_own_serial_store(js_dst out, js_size base, js_size n, js_val prefix, int has_prefix,
                                        int exclusive)
{
    js_size end = base + JS_TILE < n ? base + JS_TILE : n;
    js_val acc = has_prefix ? prefix : JS_VIDENTITY, v = acc;
    js_own o;
    for (js_size i = base; i < end; ++i) {
        o = js_own_at(JS_DST_SRC(out), i);
        js_val next = js_vop(acc, o.item);
        v = exclusive ? acc : next;
        js_dst_most(out, i, v, o);
        acc = next;
    }
    if (end == n && end > base)
        js_dst_last(out, n - 1, v, o);
    return acc;
}
#endif

JS_DEVICE_FN void js_store_values(js_dst out, js_size base, js_size n, js_val y[JS_P][JS_V])
{
#if JS_DST_OWN && JS_T > 1
    /* A transform's rules (kernels/transform.py) write arrays the compiler must assume are
     * the ones they read, so no load moves past a store: the tile's reads and items come
     * first (js_own_tile); the last element's rules run in the last tile only. */
    js_own own[JS_P][JS_V];
    js_own_tile(JS_DST_SRC(out), base, base + JS_TILE <= n && js_src_whole(JS_DST_SRC(out)), own);
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                js_dst_most(out, first + e, y[j][e], own[j][e]);
        }
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e < n)
                    js_dst_most(out, first + e, y[j][e], own[j][e]);
        }
    }
    if (base + JS_TILE >= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e == n - 1)
                    js_dst_last(out, first + e, y[j][e], own[j][e]);
        }
    }
    return;
#endif
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            JS_DST_VSTORE(y[j], out, base, js_vec_index(j));
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e < n)
                    JS_DST_ITEM(out, first + e, y[j][e]);
        }
    }
}

/* Vector j of the tile at base, its items (js_in) converted to values as they load (a
 * conversion costs no pass of its own); items past n read as the identity. Callers pass
 * `full` as a constant where they can, so each branch compiles alone. */
JS_DEVICE_FN void js_load_vector(js_src in, js_size base, js_size n, int full, js_u32 j, js_val v[JS_V])
{
    if (full) {
        JS_SRC_VLOAD(v, in, base, js_vec_index(j));
    } else {
        js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            v[e] = first + e < n ? JS_SRC_ITEM(in, first + e) : JS_VIDENTITY;
    }
}

JS_DEVICE_FN void js_load_values(js_src in, js_size base, js_size n, js_val x[JS_P][JS_V])
{
#if JS_DST_OWN && JS_T > 1
    if (base + JS_TILE <= n && js_src_whole(in)) {
        js_own own[JS_P][JS_V];
        js_own_tile(in, base, 1, own);
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                x[j][e] = own[j][e].item;
        return;
    }
#endif
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            js_load_vector(in, base, n, 1, j, x[j]);
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            js_load_vector(in, base, n, 0, j, x[j]);
    }
}
