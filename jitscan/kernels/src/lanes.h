/* jitscan lanes: one-thread tiles of a built-in operator on a CPU (ScanSpec.lanes, JS_LANES).
 * Owns no shared memory.
 *
 * The items of a vector are the lanes of a js_vec. Loops over js_val arrays compiled to
 * scalar code there, a lane at a time; these stay in vector registers.
 * - A plain scan's js_load_scan only reduces the tile, lane by lane: one combine a
 *   vector, no stores. This reorders operands, which the built-in operators allow (they
 *   commute bit for bit; ScanSpec.lanes leaves out float min and max, which do not), and
 *   the aggregate is still the same bits whoever reduces the tile.
 *   js_lanes_store reads the tile again once its prefix is known (from the cache it was
 *   just read into) and scans and stores it in one pass: log2(JS_V) shifted combines a
 *   vector, each operand kept on its side, then the carry into every lane at once.
 * - A segmented scan's js_load_scan scans each vector as it loads, with the same shifted
 *   combines kept from reaching across a head (js_lanes_segment), into the tile's array,
 *   which the output pass reads as before; or, where the operator commutes bit for bit
 *   (JS_SEG_STORE_PASS), it only combines the items after the tile's last head, lane by
 *   lane (js_lanes_seg_aggregate), and js_lanes_seg_store scans the tile from its prefix. */

#if JS_LANES
/* Where the output is as large as the cache (the host decides: JS_STREAM_BIT in the
 * launch's kind), whole one-thread tiles store around it, since an ordinary store first
 * reads the line it writes, a third pass over memory. Such stores are weakly ordered: a
 * tile fences them once after its last, so that the runtime's signal that the launch is
 * done cannot overtake them. No workgroup reads another's output (prefixes travel in the
 * tile state), so nothing else waits on them.
 * The store around the cache, where the compiler has one (clang-based CPU runtimes), and
 * the fence (x86: sfence): */
#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define JS_VEC_STREAM(x, ptr, vi) __builtin_nontemporal_store((x), ((__global js_vec*)(ptr)) + (vi))
#endif
#if (defined(__x86_64__) || defined(__i386__)) && __has_builtin(__builtin_ia32_sfence)
#define JS_STREAM_FENCE() __builtin_ia32_sfence()
#endif
#endif
#ifndef JS_VEC_STREAM
#define JS_VEC_STREAM(x, ptr, vi) JS_VEC_STORE(x, ptr, vi)
#endif
#ifndef JS_STREAM_FENCE
#define JS_STREAM_FENCE() ((void)0)
#endif

JS_DEVICE_FN js_vec js_lanes_load(js_src in, js_size base, js_size n, int full, js_u32 j)
{
    if (full)
        return JS_VEC_LOAD(in + base, j);
    js_val v[JS_V];
    js_load_vector(in, base, n, 0, j, v);
    return JS_VEC_OF(v);
}

/* The inclusive scan of a vector's lanes (Hillis-Steele: the earlier lanes on the left, in
 * the dialect's JS_VEC_STEPS steps, each combining a lane with the lanes just before its
 * own), restarted at the lanes set in *h (a lane-wise ?:, which PoCL inlines where it calls
 * select()); *h becomes: a head at the lane or before it. A plain scan passes no heads,
 * and the conditions fold away. */
#define JS_LANES_STEP(k)                                                 \
    do {                                                                 \
        x = *h ? x : js_vec_op(JS_VEC_STEP##k(js_vec, x, id), x);        \
        *h |= JS_VEC_STEP##k(js_vmask, *h, none);                        \
    } while (0)
JS_DEVICE_FN js_vec js_lanes_scan(js_vec x, js_vmask* h)
{
    js_vec id = JS_VEC_SPLAT(JS_VIDENTITY);
    js_vmask none = (js_vmask)(0);
    JS_LANES_STEP(0);
#if JS_VEC_STEPS > 1
    JS_LANES_STEP(1);
#endif
#if JS_VEC_STEPS > 2
    JS_LANES_STEP(2);
#endif
#if JS_VEC_STEPS > 3
    JS_LANES_STEP(3);
#endif
    return x;
}

/* Stores w as vector j of the tile at base: whole, or, the vector that n cuts, its items
 * before n. */
JS_DEVICE_FN void js_lanes_put(js_dst out, js_size base, js_size n, js_u32 j, js_vec w)
{
    js_size first = base + (js_size)j * JS_V;
    if (first + JS_V <= n) {
        JS_VEC_STORE(w, out + base, j);
        return;
    }
    js_val y[JS_V];
    JS_VEC_TO(y, w);
#pragma unroll
    for (js_u32 e = 0; e < JS_V; ++e)
        if (first + e < n)
            JS_DST_ITEM(out, first + e, y[e]);
}

#if JS_SEGMENTED
/* A segmented vector (heads in bits b) after the carry *c: returns its scan, restarted at
 * each head, and moves *c past it; the carry goes only up to the first head. */
JS_DEVICE_FN js_vec js_lanes_segment(js_vec x, js_u32 b, js_vec* c)
{
    if (b == 0u) {
        /* no head in the vector (nearly all of them where segments are long): the same
         * combines as below with the masks folded away. The carry past the vector is the
         * carry combined with the scan's last lane (c is a splat: the same operands, the
         * same bits), so that its chain from vector to vector is one combine, as in
         * js_lanes_output; through the combined vector's last lane it was also a lane
         * extract and a splat, and segmented scans ran 1.1-1.8x slower on PoCL */
        js_vmask none = (js_vmask)(0);
        js_vec s = js_lanes_scan(x, &none);
        js_vec w = js_vec_op(*c, s);
        *c = js_vec_op(*c, JS_VEC_SPLAT(JS_VEC_LAST(s)));
        return w;
    }
    js_vmask h = JS_VEC_HEADS(b);
    x = js_lanes_scan(x, &h);
    js_vec w = h ? x : js_vec_op(*c, x);
    *c = JS_VEC_SPLAT(JS_VEC_LAST(x));
    return w;
}

#if JS_SERIAL || JS_SEG_STORE_PASS
/* A one-pass tile (JS_SERIAL, so in lanes) of a segmented scan, or the store pass of one
 * that found its aggregate without scanning (JS_SEG_STORE_PASS): every vector scanned
 * from the carry, which starts from the prefix, and stored (an exclusive scan's shifted
 * by one item, a head's item the identity). Returns the inclusive prefix past the tile:
 * the pair js_op(prefix, aggregate) would give, its value summed in the order of the
 * items. */
JS_DEVICE_FN T js_lanes_seg_store(js_src in, js_dst out, js_size base, js_size n, T prefix, int has_prefix,
                                  int exclusive JS_SEG_LOAD_PARAMS)
{
#if JS_SEG_OFFSETS
    js_mark_heads(base, n JS_SEG_LOAD_FWD);
#endif
    js_vec c = JS_VEC_SPLAT(has_prefix ? JS_VALUE_OF(prefix) : JS_VIDENTITY);
    js_u64 seen = 0u;
    for (js_u32 k = 0; k < JS_P && base + (js_size)k * JS_V < n; k += JS_VPW) {
        /* a word whose items are all before n takes the whole word's paths, in the last
         * tile too: an input shorter than a tile is that tile */
        int whole = base + (js_size)(k + JS_VPW) * JS_V <= n;
        js_u64 word = js_head_word(base, n, whole, k JS_SEG_LOAD_FWD);
        seen |= word;
        if (whole && !exclusive && word == 0u) {
            /* as in js_load_scan: the vectors' scans without masks */
#pragma unroll
            for (js_u32 i = 0; i < JS_VPW; ++i)
                JS_VEC_STORE(js_lanes_segment(JS_VEC_LOAD(in + base, k + i), 0u, &c), out + base, k + i);
            continue;
        }
        for (js_u32 i = 0; i < JS_VPW; ++i) {
            js_u32 j = k + i;
            js_size first = base + (js_size)j * JS_V;
            if (first >= n)
                break;
            js_u32 b = (js_u32)(word >> (i * JS_V)) & ((1u << JS_V) - 1u);
            js_vec before = c;
            js_vec w = js_lanes_segment(js_lanes_load(in, base, n, first + JS_V <= n, j), b, &c);
            if (exclusive)
                w = JS_VEC_HEADS(b) ? JS_VEC_SPLAT(JS_VIDENTITY) : JS_VEC_UP1(js_vec, w, before);
            js_lanes_put(out, base, n, j, w);
        }
    }
    return js_pair((has_prefix && prefix.h) || seen != 0u, JS_VEC_LAST(c));
}
#endif

#if JS_LANE_TOTALS || JS_SEG_STORE_PASS
/* Items a .. b - 1 combined (a <= b): the ragged ends item by item, the whole vectors
 * between in four accumulators (one would wait out a float add's latency at every
 * vector). The order is the lanes', so only operators that commute bit for bit take it
 * (ScanSpec.lane_totals, seg_store_pass); it is the same bits on every run. */
JS_DEVICE_FN js_val js_lanes_range(js_src in, js_size a, js_size b)
{
    js_val r = JS_VIDENTITY;
    js_size v0 = (a + JS_V - 1) / JS_V, v1 = b / JS_V;  /* the whole vectors: v0 .. v1 - 1 */
    if (v0 >= v1) {
        for (js_size i = a; i < b; ++i)
            r = js_vop(r, JS_SRC_ITEM(in, i));
        return r;
    }
    for (js_size i = a; i < v0 * JS_V; ++i)
        r = js_vop(r, JS_SRC_ITEM(in, i));
    js_vec acc = JS_VEC_SPLAT(JS_VIDENTITY), acc1 = acc, acc2 = acc, acc3 = acc;
    js_size v = v0;
    for (; v + 4u <= v1; v += 4u) {
        acc = js_vec_op(acc, JS_VEC_LOAD(in, v));
        acc1 = js_vec_op(acc1, JS_VEC_LOAD(in, v + 1u));
        acc2 = js_vec_op(acc2, JS_VEC_LOAD(in, v + 2u));
        acc3 = js_vec_op(acc3, JS_VEC_LOAD(in, v + 3u));
    }
    for (; v < v1; ++v)
        acc = js_vec_op(acc, JS_VEC_LOAD(in, v));
    acc = js_vec_op(js_vec_op(acc, acc1), js_vec_op(acc2, acc3));
    js_val l[JS_V];
    JS_VEC_TO(l, acc);
#pragma unroll
    for (js_u32 e = 0; e < JS_V; ++e)
        r = js_vop(r, l[e]);
    for (js_size i = v1 * JS_V; i < b; ++i)
        r = js_vop(r, JS_SRC_ITEM(in, i));
    return r;
}
#endif

#if JS_SEG_STORE_PASS
/* A segmented tile's aggregate without scanning it (JS_SEG_STORE_PASS), its heads marked
 * (offsets): whether it holds a head, and its items after the last one combined (all of
 * them without). The head bits are read from the tile's end back to the last head, a word
 * at a time, and only the items after it are read (with short segments, a small part of
 * the tile). The same bits whoever works it out: its owner or a workgroup falling back. */
JS_DEVICE_FN T js_lanes_seg_aggregate(js_src in, js_size base, js_size n JS_SEG_LOAD_PARAMS)
{
    int full = base + JS_TILE <= n;
    js_size end = full ? base + JS_TILE : n;
    js_size from = base;
    js_u32 seen = 0u;
#if !JS_SEG_OFFSETS
    if (row_len) {
        /* rows: the last head is the last multiple of row_len before end (one division,
         * where a word's head bits take one each) */
        js_size last = end - 1u - (end - 1u) % row_len;
        seen = last >= base;
        return js_pair(seen, js_lanes_range(in, seen ? last : base, end));
    }
#endif
    /* words of JS_VPW * JS_V items; the last holds item end - 1 */
    for (js_u32 w = (js_u32)((end - base - 1u) / (JS_VPW * JS_V)) + 1u; w-- > 0u;) {
        int whole = base + (js_size)(w + 1u) * (JS_VPW * JS_V) <= n;
        js_u64 word = js_head_word(base, n, whole, w * JS_VPW JS_SEG_LOAD_FWD);
        if (word != 0u) {
            /* (lanes are OpenCL C's vector types, whose clz takes a ulong) */
            from = base + (js_size)w * (JS_VPW * JS_V) + (js_size)(63u - (js_u32)clz(word));
            seen = 1u;
            break;
        }
    }
    return js_pair(seen, js_lanes_range(in, from, end));
}
#endif

#if JS_LANE_TOTALS
/* A one-thread tile of a segmented reduction by offsets (JS_LANE_TOTALS), as
 * js_load_scan and js_store_segment_totals do it but with no scan and no staging: each
 * segment's part in the tile is combined directly. The totals of segments ending in the
 * tile go to out; the part of the one continuing from before it to carry[t], which
 * js_rts_seg_fixup completes. Returns the tile's aggregate for the spine: whether it holds
 * a head, and its items after the last one (all of them without). The last tile's
 * aggregate, which no tile after it reads, may leave out its trailing empty segments. */
JS_DEVICE_FN T js_lanes_seg_totals(js_src in, js_dst out, js_size base, js_size n, JS_GLOBAL js_val* carry
                                   JS_SEG_LOAD_PARAMS)
{
    (void)sh;
    js_size t = base / JS_TILE, end = base + JS_TILE < n ? base + JS_TILE : n;
    js_size lo = seg_first[t], hi = seg_first[t + 1], from = base;
    js_u32 seen = 0u;
    /* segments lo .. hi - 1 start in the tile (or, the last tile's trailing empty ones, at
     * n); the part before each is the rest of the one before it */
    for (js_size s = lo; s < hi; ++s) {
        js_size b = offsets[s];
        /* from <= b <= end for offsets that pass the check: bad ones read nothing outside the tile */
        b = b < from ? from : b > end ? end : b;
        js_val part = js_lanes_range(in, from, b);
        if (s > lo)
            JS_DST_ITEM(out, s - 1, part);
        else if (s > 0)  /* (offsets[0] == 0 names no segment before it) */
            carry[t] = part;
        seen |= (js_u32)(b < end);
        from = b;
    }
    return js_pair(seen, js_lanes_range(in, from, end));
}
#endif
#else
JS_DEVICE_FN T js_lanes_reduce(js_src in, js_size base, js_size n)
{
    js_vec acc = JS_VEC_SPLAT(JS_VIDENTITY);
#if JS_P % 4 == 0
    /* four accumulators: one would wait out a float add's latency at every vector */
    js_vec acc1 = acc, acc2 = acc, acc3 = acc;
    if (base + JS_TILE <= n) {
        for (js_u32 j = 0; j < JS_P; j += 4) {
            acc = js_vec_op(acc, JS_VEC_LOAD(in + base, j));
            acc1 = js_vec_op(acc1, JS_VEC_LOAD(in + base, j + 1));
            acc2 = js_vec_op(acc2, JS_VEC_LOAD(in + base, j + 2));
            acc3 = js_vec_op(acc3, JS_VEC_LOAD(in + base, j + 3));
        }
        acc = js_vec_op(js_vec_op(acc, acc1), js_vec_op(acc2, acc3));
    } else
#endif
    {
        /* the last tile (or JS_P < 4): its vectors up to n, each whole one loaded whole;
         * the identity past them would change nothing */
        for (js_u32 j = 0; j < JS_P && base + (js_size)j * JS_V < n; ++j)
            acc = js_vec_op(acc, js_lanes_load(in, base, n, base + (js_size)(j + 1) * JS_V <= n, j));
    }
    js_val a[JS_V];
    JS_VEC_TO(a, acc);
    js_val r = a[0];
#pragma unroll
    for (js_u32 e = 1; e < JS_V; ++e)
        r = js_vop(r, a[e]);
    return r;
}

/* Vector j's output after the carry *c (every lane of it), which moves on past the vector.
 * The carry's chain from vector to vector is one combine: the vector's own scan and its
 * last lane are worked out beside it. */
JS_DEVICE_FN js_vec js_lanes_output(js_vec x, js_vec* c, int exclusive)
{
    js_vmask none = (js_vmask)(0);
    js_vec s = js_lanes_scan(x, &none);
    js_vec w = js_vec_op(*c, s);
    js_vec y = exclusive ? JS_VEC_UP1(js_vec, w, *c) : w;
    *c = js_vec_op(*c, JS_VEC_SPLAT(JS_VEC_LAST(s)));
    return y;
}

/* Returns the inclusive prefix past the tile (the prefix, if any, and every item).
 * `stream`: whole tiles store around the cache (JS_STREAM_BIT). */
JS_DEVICE_FN T js_lanes_store(js_src in, js_dst out, js_size base, js_size n, T prefix, int has_prefix,
                              int exclusive, int stream)
{
    js_vec c = JS_VEC_SPLAT(has_prefix ? prefix : JS_VIDENTITY);
    if (base + JS_TILE <= n) {
        /* two loops, not one with the choice inside: clang merges the two stores of such
         * a branch into one and drops the non-temporal hint (PoCL: no faster than
         * ordinary stores at 2^24, against 0.84-0.97x the time with two loops) */
        if (stream) {
            for (js_u32 j = 0; j < JS_P; ++j)
                JS_VEC_STREAM(js_lanes_output(JS_VEC_LOAD(in + base, j), &c, exclusive), out + base, j);
            JS_STREAM_FENCE();
        } else {
            for (js_u32 j = 0; j < JS_P; ++j)
                JS_VEC_STORE(js_lanes_output(JS_VEC_LOAD(in + base, j), &c, exclusive), out + base, j);
        }
        return JS_VEC_LAST(c);
    }
    /* the last tile: whole vectors as above, the one that n cuts item by item */
    for (js_u32 j = 0; j < JS_P && base + (js_size)j * JS_V < n; ++j) {
        int whole = base + (js_size)(j + 1) * JS_V <= n;
        js_lanes_put(out, base, n, j, js_lanes_output(js_lanes_load(in, base, n, whole, j), &c, exclusive));
    }
    return JS_VEC_LAST(c);
}
#endif
#endif
