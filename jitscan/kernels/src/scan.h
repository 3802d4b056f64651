/* jitscan scan: a tile's scan across the workgroup, and the output it stores.
 * Owns js_scan_storage: the rows and subgroup aggregates crossing the workgroup.
 *
 * Scan order inside a subgroup is row by row, lane by lane, item by item, so the
 * carry of row j-1 enters row j. Without hardware shuffles the dialect makes the
 * whole workgroup one subgroup (JS_SG == JS_T) and scans rows in local memory.
 */

/* the total a whole-array reduction writes: a float sum's plus +0.0, since the identity
 * -0.0 leaves a sum of negative zeros at -0.0 and NumPy's sum, which starts from +0.0,
 * gives +0.0 there (ScanSpec.positive_zero) */
#if JS_POSITIVE_ZERO
#define JS_TOTAL(v) ((v) + (js_val)0)
#else
#define JS_TOTAL(v) (v)
#endif

/* a subgroup's row values in scan order, padded by one after every JS_P of them
 * (js_scan_rows_smem) */
#define JS_SMEM_ROW_AT(p) ((p) + (p) / JS_P)

typedef struct {
#if !JS_HAS_SHUFFLE && JS_T > 1
    T rows[JS_P][JS_T];          /* row scans when the workgroup is the subgroup */
#endif
#if JS_ROWS_IN_SMEM
    T sg_rows[JS_NSG][JS_SG * (JS_P + 1)];  /* each subgroup's rows, read across (js_scan_rows_smem) */
#endif
    T sg_total[JS_NSG];          /* subgroup aggregates, then their exclusive scan */
    T tile_total;
} js_scan_storage;
JS_STATIC_ASSERT(js_scan_storage_size, sizeof(js_scan_storage) == JS_SCAN_STORAGE_BYTES);

#if JS_T > 1
#if JS_HAS_SHUFFLE
/* One step of a subgroup's inclusive scan: s combined with the value of the lane d
 * below, where there is one. The dialect may give it as one shuffle and one predicated
 * op (JS_PTX_SCAN_STEP: NVIDIA's, for the built-in operators on integers), where the
 * portable form computes the op and selects. */
#ifdef JS_PTX_SCAN_STEP
#define js_scan_step(s, d) JS_PTX_SCAN_STEP(s, d)
#else
JS_DEVICE_FN T js_scan_step(T s, js_u32 d)
{
    T up = JS_SHFL_UP(s, d);
    if (JS_LANE >= d)
        s = js_op(up, s);
    return s;
}
#endif
#endif

/* Scans the JS_P row values v[] of every lane across its subgroup: excl[j] is the
 * combination of lanes before this one in row j, total[j] that of the whole row.
 * (A tile of one thread has no rows to scan: js_scan_tile runs its carry alone.) */
JS_DEVICE_FN void js_scan_rows(T v[JS_P], T excl[JS_P], T total[JS_P], JS_LOCAL_PTR js_scan_storage* sh)
{
#if JS_HAS_SHUFFLE
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        T s = v[j];
#pragma unroll
        for (js_u32 d = 1; d < JS_SG; d <<= 1)
            s = js_scan_step(s, d);
        T before = JS_SHFL_UP(s, 1);
        excl[j] = JS_LANE ? before : JS_IDENTITY;
        total[j] = JS_SHFL_IDX(s, JS_SG - 1);
    }
#else
    /* These loops stay unrolled on every device: PoCL 3 mis-scans rows of two threads
     * when they are loops around the barriers. */
    js_u32 lid = JS_LID;
#pragma unroll
    for (js_u32 j = 0; j < JS_P; ++j)
        sh->rows[j][lid] = v[j];
    JS_BARRIER();
    /* Kogge-Stone over all rows at once: one pair of barriers per step, not per row. */
    for (js_u32 d = 1; d < JS_T; d <<= 1) {
        if (lid >= d) {
#pragma unroll
            for (js_u32 j = 0; j < JS_P; ++j)
                v[j] = js_op(sh->rows[j][lid - d], v[j]);
        }
        JS_BARRIER();
#pragma unroll
        for (js_u32 j = 0; j < JS_P; ++j)
            sh->rows[j][lid] = v[j];
        JS_BARRIER();
    }
#pragma unroll
    for (js_u32 j = 0; j < JS_P; ++j) {
        excl[j] = lid ? sh->rows[j][lid - 1] : JS_IDENTITY;
        total[j] = sh->rows[j][JS_T - 1];
    }
    /* the rows are rewritten by the next scan; let every thread read them first */
    JS_BARRIER();
#endif
}
#endif

#if JS_ROWS_IN_SMEM
/* What js_scan_rows and the carry through the rows compute, by another road: left[j]
 * gets the combination of everything in the subgroup's stretch before row j of this
 * lane, and the stretch's total is returned. The rows pass through shared memory so
 * that each lane holds JS_P values that are consecutive in scan order: one serial scan
 * of those and one subgroup scan of the lanes' totals then replace a subgroup scan per
 * row. Each step of a row scan is a shuffle and an op (and a select, but for NVIDIA's
 * step in PTX), twice over for 64-bit values: for those the row scans were most of a
 * tile's instructions.
 * Lane l reads positions l*JS_P..l*JS_P+JS_P-1, which the padding (JS_SMEM_ROW_AT)
 * spreads over the banks. Only the subgroup touches its rows, so its own sync orders
 * them; no workgroup barrier is needed. */
JS_DEVICE_FN T js_scan_rows_smem(T v[JS_P], T left[JS_P], JS_LOCAL_PTR js_scan_storage* sh)
{
    JS_LOCAL_PTR T* rows = sh->sg_rows[JS_SG_ID];
    js_u32 lane = JS_LANE;
    /* the previous scan's reads of these rows are done (a fallback scans again) */
    JS_SUBGROUP_SYNC();
#pragma unroll
    for (js_u32 j = 0; j < JS_P; ++j)
        rows[JS_SMEM_ROW_AT(j * JS_SG + lane)] = v[j];
    JS_SUBGROUP_SYNC();
    JS_LOCAL_PTR T* mine = rows + lane * (JS_P + 1);
    T s[JS_P];
    s[0] = mine[0];
#pragma unroll
    for (js_u32 k = 1; k < JS_P; ++k)
        s[k] = js_op(s[k - 1], mine[k]);
    T t = s[JS_P - 1];
#pragma unroll
    for (js_u32 d = 1; d < JS_SG; d <<= 1)
        t = js_scan_step(t, d);
    T before = JS_SHFL_UP(t, 1);
    T all = JS_SHFL_IDX(t, JS_SG - 1);
    /* each lane rewrites only the values it read: their exclusive prefixes */
    mine[0] = lane ? before : JS_IDENTITY;
#pragma unroll
    for (js_u32 k = 1; k < JS_P; ++k)
        mine[k] = lane ? js_op(before, s[k - 1]) : s[k - 1];
    JS_SUBGROUP_SYNC();
#pragma unroll
    for (js_u32 j = 0; j < JS_P; ++j)
        left[j] = rows[JS_SMEM_ROW_AT(j * JS_SG + lane)];
    return all;
}
#endif

/* Scans a vector in place, restarting at its heads (bits b); returns its aggregate. */
JS_DEVICE_FN T js_scan_vector(js_val v[JS_V], js_u32 b)
{
    (void)b;
#pragma unroll
    for (js_u32 e = 1; e < JS_V; ++e)
        v[e] = JS_BIT_HEAD(b, e) ? v[e] : js_vop(v[e - 1], v[e]);
    return JS_LIFT(JS_BIT_SEEN(b, JS_V - 1), v[JS_V - 1]);
}

/* Scans the tile in registers. Afterwards x[j][e] holds the inclusive prefix within its
 * vector (restarted at each head) and left[j] the combination of everything in the tile
 * before vector j; the tile aggregate is returned to every thread.
 *
 * The owner of a tile and any workgroup doing a fallback for it call this same
 * function on the same data with the same thread mapping, so the aggregate is
 * bit-identical however often it is computed. The tile state relies on that: parts of
 * a READY value posted by different workgroups may be mixed by a reader. */
JS_DEVICE_FN T js_scan_tile(js_val x[JS_P][JS_V], T left[JS_P], js_heads heads, JS_LOCAL_PTR js_scan_storage* sh)
{
#if JS_T == 1
    /* One thread (CPUs): its vectors in order, one carry running through them, with
     * no arrays of row values between the steps (a long tile's would not stay in L1).
     * What the rows below compute when a row is one lane, less the identity ops. */
    T carry = JS_IDENTITY;
    (void)sh;
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        T last = js_scan_vector(x[j], JS_VBITS(heads, j));
        left[j] = carry;
        carry = j ? js_op(carry, last) : last;
    }
    return carry;
#else
    T last[JS_P];
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j)
        last[j] = js_scan_vector(x[j], JS_VBITS(heads, j));
#if JS_ROWS_IN_SMEM
    T carry = js_scan_rows_smem(last, left, sh);
#else
    T excl[JS_P], total[JS_P];
    js_scan_rows(last, excl, total, sh);

    left[0] = excl[0];
    T carry = total[0];
JS_UNROLL
    for (js_u32 j = 1; j < JS_P; ++j) {
        left[j] = js_op(carry, excl[j]);
        carry = js_op(carry, total[j]);
    }
#endif
#if JS_NSG > 1
    js_u32 lane = JS_LANE, sg = JS_SG_ID;
    if (lane == 0)
        sh->sg_total[sg] = carry;
    JS_BARRIER();
    if (sg == 0) {
        /* one subgroup scans the subgroup aggregates (JS_NSG <= JS_SG) */
        T s = lane < JS_NSG ? sh->sg_total[lane] : JS_IDENTITY;
#pragma unroll
        for (js_u32 d = 1; d < JS_SG; d <<= 1)
            s = js_scan_step(s, d);
        T before = JS_SHFL_UP(s, 1);
        T all = JS_SHFL_IDX(s, JS_SG - 1);
        if (lane < JS_NSG)
            sh->sg_total[lane] = lane ? before : JS_IDENTITY;
        if (lane == 0)
            sh->tile_total = all;
    }
    JS_BARRIER();
    T agg = sh->tile_total;
    if (sg > 0) {
        T pre = sh->sg_total[sg];
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j)
            left[j] = js_op(pre, left[j]);
    }
    /* sg_total is rewritten by the next scan (a fallback, say) */
    JS_BARRIER();
    return agg;
#else
    return carry;
#endif
#endif
}

/* Loads values; *own receives this thread's head bits. */
JS_DEVICE_FN void js_load_input(js_src in, js_size base, js_size n, js_val x[JS_P][JS_V],
                                js_heads* own JS_SEG_LOAD_PARAMS)
{
    js_load_values(in, base, n, x);
#if JS_SEGMENTED
#if JS_SEG_OFFSETS
    js_mark_heads(base, n JS_SEG_LOAD_FWD);
#endif
    js_heads mask = js_no_heads();
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j)
        JS_SET_HEADS(mask, j, JS_VECTOR_HEADS(base, n, base + JS_TILE <= n, j));
    *own = mask;
#else
    *own = js_no_heads();
#endif
}

/* Loads the tile at base and scans it (js_load_input, then js_scan_tile): the one step
 * the owner of a tile and a workgroup falling back on it take. A one-thread tile does
 * both in one pass over its vectors, with the same expressions: on a CPU the tile is an
 * array in memory, and a pass of its own is a write and a read of it. */
JS_DEVICE_FN T js_load_scan(js_src in, js_size base, js_size n, js_val x[JS_P][JS_V], T left[JS_P],
                            js_heads* own, JS_LOCAL_PTR js_scan_storage* tile_sh JS_SEG_LOAD_PARAMS)
{
#if JS_T > 1
    js_load_input(in, base, n, x, own JS_SEG_LOAD_FWD);
    return js_scan_tile(x, left, *own, tile_sh);
#else
    (void)tile_sh;
    int full = base + JS_TILE <= n;
#if JS_SEG_OFFSETS
    js_mark_heads(base, n JS_SEG_LOAD_FWD);
#endif
    js_heads mask = js_no_heads();
#if JS_SEG_STORE_PASS
    /* the aggregate alone: js_lanes_seg_store scans the tile */
    (void)x;
    (void)left;
    (void)full;
    *own = mask;
    return js_lanes_seg_aggregate(in, base, n JS_SEG_LOAD_FWD);
#elif JS_SEQ_SEGMENTS && JS_LANES
    /* as below, in lanes (js_lanes_segment); the aggregate is again one function of the
     * tile's items, whoever computes it */
    (void)left;
    js_u64 seen = 0u;
    js_vec c = JS_VEC_SPLAT(JS_VIDENTITY);
    /* a word of head bits at a time, kept in a register: ORed into the mask vector by
     * vector, the same word in memory is a chain of read-modify-writes */
    for (js_u32 k = 0; k < JS_P; k += JS_VPW) {
        js_u64 word = js_head_word(base, n, full, k JS_SEG_LOAD_FWD);
        if (word == 0u) {
            /* most words where segments are long: the vectors' scans without masks */
#pragma unroll
            for (js_u32 i = 0; i < JS_VPW; ++i) {
                js_vec w = js_lanes_segment(js_lanes_load(in, base, n, full, k + i), 0u, &c);
                JS_VEC_TO(x[k + i], w);
            }
            continue;
        }
#pragma unroll
        for (js_u32 i = 0; i < JS_VPW; ++i) {
            js_u32 b = (js_u32)(word >> (i * JS_V)) & ((1u << JS_V) - 1u);
            js_vec w = js_lanes_segment(js_lanes_load(in, base, n, full, k + i), b, &c);
            JS_VEC_TO(x[k + i], w);
        }
        JS_SET_HEADS(mask, k, word);
        seen |= word;
    }
    *own = mask;
    return JS_LIFT(seen != 0u, JS_VEC_LAST(c));
#elif JS_SEQ_SEGMENTS
    /* the carry is the last item's value: x already holds the scan so far. The tile's
     * aggregate is the same pair as js_scan_tile's, bit for bit (the same adds) */
    (void)left;
    js_u64 seen = 0u;
    js_val c = JS_VIDENTITY;  /* (vector 0 takes no carry) */
    /* the head bits a word at a time, as in lanes above */
    for (js_u32 k = 0; k < JS_P; k += JS_VPW) {
        js_u64 word = js_head_word(base, n, full, k JS_SEG_LOAD_FWD);
        JS_SET_HEADS(mask, k, word);
        seen |= word;
        if (word == 0u && k > 0u) {
            for (js_u32 j = k; j < k + JS_VPW; ++j) {
                js_val v[JS_V];
                js_load_vector(in, base, n, full, j, v);
                js_scan_vector(v, 0u);
#pragma unroll
                for (js_u32 e = 0; e < JS_V; ++e)
                    x[j][e] = js_vop(c, v[e]);
                c = x[j][JS_V - 1];
            }
            continue;
        }
        for (js_u32 j = k; j < k + JS_VPW; ++j) {
            /* in registers, stored once: the vector's own scan, then the carry before its first head */
            js_u32 b = (js_u32)(word >> ((j - k) * JS_V)) & ((1u << JS_V) - 1u);
            js_val v[JS_V];
            js_load_vector(in, base, n, full, j, v);
            js_scan_vector(v, b);
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                x[j][e] = j == 0u || JS_BIT_SEEN(b, e) ? v[e] : js_vop(c, v[e]);
            c = x[j][JS_V - 1];
        }
    }
    *own = mask;
    return JS_LIFT(seen != 0u, c);
#elif JS_LANES
    /* the aggregate alone: js_lanes_store scans the tile */
    (void)x;
    (void)left;
    (void)full;
    *own = mask;
    return js_lanes_reduce(in, base, n);
#else
    T carry = JS_IDENTITY;
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        js_load_vector(in, base, n, full, j, x[j]);
        js_u32 b = JS_VECTOR_HEADS(base, n, full, j);
#if JS_SEGMENTED
        JS_SET_HEADS(mask, j, b);
#endif
        T last = js_scan_vector(x[j], b);
        left[j] = carry;
        carry = j ? js_op(carry, last) : last;
    }
    *own = mask;
    return carry;
#endif
#endif
}


/* The output of one vector: its items v (scanned within the vector, restarted at the
 * heads in bits b) after the carry l, or for an exclusive scan shifted by one item. */
JS_DEVICE_FN void js_output_vector(js_val y[JS_V], js_val v[JS_V], js_val l, js_u32 b, int exclusive)
{
    (void)b;
    if (exclusive) {
        y[0] = JS_BIT_HEAD(b, 0) ? JS_VIDENTITY : l;
#pragma unroll
        for (js_u32 e = 1; e < JS_V; ++e)
            y[e] = JS_BIT_HEAD(b, e) ? JS_VIDENTITY : JS_BIT_SEEN(b, e - 1) ? v[e - 1] : js_vop(l, v[e - 1]);
    } else {
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            y[e] = JS_BIT_SEEN(b, e) ? v[e] : js_vop(l, v[e]);
    }
}

/* Writes the scan of a tile whose predecessors combine to `prefix` (ignored when
 * has_prefix is 0, as for the first tile). The carry l into vector j only reaches
 * the items before the vector's first head; exclusive scans start a head from the
 * identity. */
JS_DEVICE_FN void js_store_output(js_dst out, js_size base, js_size n, js_val x[JS_P][JS_V],
                                  T left[JS_P], T prefix, int has_prefix, int exclusive, js_heads heads)
{
    (void)heads;
#if JS_SEQ_SEGMENTS
    /* x is the tile's own scan: the prefix goes before the items up to the first head */
    (void)left;
    js_val p = JS_VALUE_OF(prefix);
    if (exclusive || base + JS_TILE > n) {
        /* the general loop: shifted by one item, or the last tile's partial vectors */
        int before = has_prefix;
        js_val prev = has_prefix ? p : JS_VIDENTITY;  /* exclusive: the value before the item */
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_u32 b = JS_VBITS(heads, j);
            js_val y[JS_V];
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e) {
                js_val v = before && !JS_BIT_SEEN(b, e) ? js_vop(p, x[j][e]) : x[j][e];
                y[e] = exclusive ? (JS_BIT_HEAD(b, e) ? JS_VIDENTITY : prev) : v;
                prev = v;
            }
            before = before && b == 0u;
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e < n)
                    JS_DST_ITEM(out, first + e, y[e]);
        }
        return;
    }
    /* whole inclusive tiles: the prefix up to the vector of the first head, then a copy */
    js_u32 j = 0;
    if (has_prefix) {
        for (; j < JS_P; ++j) {
            js_u32 b = JS_VBITS(heads, j);
            js_val y[JS_V];
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                y[e] = JS_BIT_SEEN(b, e) ? x[j][e] : js_vop(p, x[j][e]);
            JS_DST_VSTORE(y, out, base, js_vec_index(j));
            if (b) {
                ++j;
                break;
            }
        }
    }
    for (; j < JS_P; ++j)
        JS_DST_VSTORE(x[j], out, base, js_vec_index(j));
    return;
#endif
#if JS_OUTPUTS_FIRST
    /* every vector's output first, then the stores in one run (ScanSpec.outputs_first:
     * segmented 32-bit integer tiles in registers, 6% faster so on the H100) */
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        js_val y[JS_V];
        js_output_vector(y, x[j], JS_VALUE_OF(has_prefix ? js_op(prefix, left[j]) : left[j]),
                         JS_VBITS(heads, j), exclusive);
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            x[j][e] = y[e];
    }
    js_store_values(out, base, n, x);
    return;
#endif
    /* vector by vector, each stored as soon as it is computed: on a CPU, where the tile
     * is an array in memory, it is then read once more and never rewritten */
    if (base + JS_TILE <= n) {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_val y[JS_V];
            js_output_vector(y, x[j], JS_VALUE_OF(has_prefix ? js_op(prefix, left[j]) : left[j]),
                             JS_VBITS(heads, j), exclusive);
            JS_DST_VSTORE(y, out, base, js_vec_index(j));
        }
    } else {
JS_UNROLL
        for (js_u32 j = 0; j < JS_P; ++j) {
            js_val y[JS_V];
            js_output_vector(y, x[j], JS_VALUE_OF(has_prefix ? js_op(prefix, left[j]) : left[j]),
                             JS_VBITS(heads, j), exclusive);
            js_size first = base + js_vec_index(j) * JS_V;
#pragma unroll
            for (js_u32 e = 0; e < JS_V; ++e)
                if (first + e < n)
                    JS_DST_ITEM(out, first + e, y[e]);
        }
    }
}
