/* jitscan tile layer: loading, scanning and storing one tile held in registers.
 *
 * A tile is JS_T threads x JS_P vectors x JS_V items. Threads form subgroups of
 * JS_SG lanes. Vector j of lane l in subgroup s is vector s*(JS_P*JS_SG) + j*JS_SG + l
 * of the tile: a subgroup owns one contiguous stretch, and within it each row j
 * is read by one coalesced load across the lanes.
 *
 * Scan order inside a subgroup is row by row, lane by lane, item by item, so the
 * carry of row j-1 enters row j. Without hardware shuffles the dialect makes the
 * whole workgroup one subgroup (JS_SG == JS_T) and scans rows in local memory.
 */

#define JS_TILE (JS_T * JS_P * JS_V)
#define JS_NSG (JS_T / JS_SG)

#define JS_NOT_READY 0u
#define JS_READY 1u
#define JS_INCLUSIVE 2u

#define JS_LB_LOOK 0u
#define JS_LB_FALLBACK 1u
#define JS_LB_DONE 2u

/* why look-back's watchdog fired: ctrl[JS_CTRL_DEADLOCK] = epoch << 2 | cause (the larger
 * kept) */
#define JS_STUCK_SPINS 1u
#define JS_STUCK_TIME 2u

/* ctrl[] words: zeroed with the buffer when it is new or the epoch wraps, after a
 * deadlock, and (the counters) before a counting launch; the last tile of a launch
 * rewinds the tile counter */
#define JS_CTRL_TILE 0
#define JS_CTRL_DEADLOCK 1
#define JS_CTRL_SPINS 2
#define JS_CTRL_STEPS 3
#define JS_CTRL_FALLBACKS 4
#define JS_CTRL_INSERTIONS 5
/* look-back's watchdog: how long the wait that fired it lasted, in 1,024 clock ticks */
#define JS_CTRL_WAITED 6
/* a scan that starts from a value (the host's initial=, kind | JS_CARRY_BIT): its bits,
 * up to 32 bytes, written by the host before the launch */
#define JS_CTRL_CARRY 8
/* the tile descriptors follow the control words in the same zeroed buffer */
#define JS_CTRL_WORDS 16
/* the launch argument `kind`: a JS_KIND_* code, or'ed with this for a scan from a carry */
#define JS_CARRY_BIT 4u
/* and with this where the output is as large as the cache (the host decides, on CPUs):
 * one-thread tiles then store around it (JS_VEC_STREAM), since an ordinary store first
 * reads the line it writes, a third pass over memory. Such stores are weakly ordered: a
 * tile fences them once after its last (JS_STREAM_FENCE), so that the runtime's signal
 * that the launch is done cannot overtake them. No workgroup reads another's output
 * (prefixes travel in the tile state), so nothing else waits on them */
#define JS_STREAM_BIT 8u

/* the total a whole-array reduction writes: a float sum's plus +0.0, since the identity
 * -0.0 leaves a sum of negative zeros at -0.0 and NumPy's sum, which starts from +0.0,
 * gives +0.0 there (ScanSpec.positive_zero) */
#if JS_POSITIVE_ZERO
#define JS_TOTAL(v) ((v) + (js_val)0)
#else
#define JS_TOTAL(v) (v)
#endif

/* Items always hold plain values (js_val). A segmented scan carries its head flags
 * beside them as one bit per item (bit j*JS_V+e of a js_heads mask) and lifts only
 * vector and larger aggregates to (head, value) pairs T: a pair per item would double
 * the tile's registers and halve the loads a thread can keep in flight. */
#if JS_SEGMENTED && JS_HEAD_WORDS > 1
/* More than 64 items a thread (CPUs' one-thread tiles): the bits in words. JS_V
 * divides 64, so the bits of one vector share a word. */
#define JS_HWORD(h, j) ((h).w[((j) * JS_V) >> 6])
#define JS_HSHIFT(j) (((j) * JS_V) & 63u)
/* the JS_V bits of vector j, and ORing them in */
#define JS_VBITS(h, j) ((js_u32)(JS_HWORD(h, j) >> JS_HSHIFT(j)) & ((1u << JS_V) - 1u))
#define JS_SET_HEADS(h, j, bits) (JS_HWORD(h, j) |= (js_u64)(bits) << JS_HSHIFT(j))
JS_DEVICE_FN js_heads js_no_heads(void)
{
    js_heads h;
    for (js_u32 i = 0; i < JS_HEAD_WORDS; ++i)
        h.w[i] = 0;
    return h;
}
#elif JS_SEGMENTED
#define JS_VBITS(h, j) ((js_u32)((h) >> ((j) * JS_V)) & ((1u << JS_V) - 1u))
#define JS_SET_HEADS(h, j, bits) ((h) |= (js_heads)(bits) << ((j) * JS_V))
#define js_no_heads() ((js_heads)0)
#else
#define JS_VBITS(h, j) 0u
#define js_no_heads() ((js_heads)0)
#endif
/* Item e of a vector whose bits are b: a head; a head among items 0..e. A vector's
 * bits are read once and tested per item. */
#define JS_BIT_HEAD(b, e) (((b) >> (e)) & 1u)
#define JS_BIT_SEEN(b, e) (((b) & ((2u << (e)) - 1u)) != 0u)
#define JS_HEAD(h, j, e) JS_BIT_HEAD(JS_VBITS(h, j), e)
#define JS_SEEN(h, j, e) JS_BIT_SEEN(JS_VBITS(h, j), e)
#if JS_SEGMENTED
#define JS_LIFT(head, v) js_pair((head), (v))
#else
#define JS_LIFT(head, v) (v)
#endif

/* A one-thread segmented tile (CPUs) finishes its own scan as it loads: x[j][e] is the
 * segmented scan of the tile from its first item (restarted at every head), and left[]
 * is not written. The output pass then only puts the prefix before the items up to the
 * tile's first head and stores the others as they are; with short segments that is most
 * of the tile, and no (head, value) pair is formed per vector. */
#define JS_SEQ_SEGMENTS (JS_T == 1 && JS_SEGMENTED)

/* look-back windows of one subgroup or more are walked in registers (lookback.h); JS_LB_W
 * and JS_SG are powers of two (spec.py), so a wide window is whole subgroups */
#define JS_WARP_WALK (JS_HAS_SHUFFLE && JS_LB_W == JS_SG)
#define JS_WIDE_WALK (JS_HAS_SHUFFLE && JS_LB_W > JS_SG)

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
#if JS_WIDE_WALK
    js_u32 lb_key[JS_LB_W / JS_SG];  /* each subgroup's stop in a wide window */
    T lb_part[JS_LB_W / JS_SG];      /* and what it takes */
#elif !JS_WARP_WALK
    T lb_val[JS_LB_W];           /* one look-back window of predecessor values */
    js_u32 lb_flag[JS_LB_W];
#endif
#if JS_DETERMINISTIC
    T lb_anchor;                 /* I(a) of the window's anchor (deterministic.h) */
    js_i64 lb_target;            /* the tile whose window is looked at */
#endif
    T lb_prefix;
    js_i64 lb_cur;
    js_u32 lb_ctrl[2];           /* the protocol's next step, by loop iteration parity */
    js_u32 tile;
#if JS_SEG_OFFSETS
    js_u32 head_bits[(JS_TILE + 31) / 32];  /* the tile's heads, marked from the offsets */
#endif
#if JS_SEG_STAGE
    js_val stage[JS_TILE + 1];              /* a reduction's inclusive values, from position base - 1 */
#endif
} js_shared;

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
JS_DEVICE_FN void js_scan_rows(T v[JS_P], T excl[JS_P], T total[JS_P], JS_LOCAL_PTR js_shared* sh)
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
JS_DEVICE_FN T js_scan_rows_smem(T v[JS_P], T left[JS_P], JS_LOCAL_PTR js_shared* sh)
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
JS_DEVICE_FN T js_scan_tile(js_val x[JS_P][JS_V], T left[JS_P], js_heads heads, JS_LOCAL_PTR js_shared* sh)
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

/* ---- element layer: what the input and output arrays hold -------------------------
 * Values in, values out. Segmented scans also learn their heads: from a uint8 array,
 * from the position when row_len != 0, or from CSR offsets (JS_SEG_OFFSETS). */

JS_DEVICE_FN void js_store_values(js_dst out, js_size base, js_size n, js_val y[JS_P][JS_V])
{
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

#if JS_SEG_OFFSETS
/* The first segment s < nseg with offsets[s] >= key (nseg if none): a binary search. */
JS_DEVICE_FN js_size js_first_segment(JS_GLOBAL const js_size* offsets, js_size nseg, js_size key)
{
    js_size lo = 0, hi = nseg;
    while (lo < hi) {
        js_size mid = lo + (hi - lo) / 2;
        if (offsets[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The workgroup marks the heads of the tile in local memory from the offsets of the
 * segments starting in it (seg_first[t] .. seg_first[t + 1]), so every segment costs
 * one coalesced read. */
JS_DEVICE_FN void js_mark_heads(js_size base, js_size n JS_SEG_LOAD_PARAMS)
{
    js_u32 lid = JS_LID;
#if JS_SEARCH_SEGMENTS
    /* a one-thread tile (ScanSpec.searches_segments): its segments are those from the
     * first at or after base up to the first that starts past the tile; seg_first is not
     * read (the launch makes no pre-pass, whose command PoCL's threaded driver hands to
     * its workers for about 12 us) */
    (void)seg_first;
    js_size lo = js_first_segment(offsets, nseg, base), hi = nseg;
#else
    js_size t = base / JS_TILE;
    js_size lo = seg_first[t], hi = seg_first[t + 1];
#endif
    /* a previous call's readers may still be reading the bits (a one-thread workgroup
     * needs no barriers here, and marks its heads where a barrier could not be: in the
     * one-pass branch of a serial tile) */
#if JS_T > 1
    JS_BARRIER();
#endif
    for (js_u32 w = lid; w < (JS_TILE + 31) / 32; w += JS_T)
        sh->head_bits[w] = 0u;
#if JS_T > 1
    JS_BARRIER();
#endif
    /* offsets[s] >= base for s >= lo, and < base + JS_TILE for s < hi except in the
     * last tile, where trailing empty segments start at n */
    for (js_size s = lo + lid; s < hi && s < nseg; s += JS_T) {
        js_size p = offsets[s];
#if JS_SEARCH_SEGMENTS
        if (p >= base + JS_TILE)
            break;
#endif
        /* (unsigned: p < base wraps past JS_TILE) within the tile, as offsets that pass
         * the check always are: bad ones mark no head outside it */
        if (p < n && p - base < (js_size)JS_TILE) {
#if JS_T > 1  /* several items' heads may share a word */
            JS_ATOMIC_OR_LOCAL(&sh->head_bits[(p - base) >> 5], 1u << ((p - base) & 31u));
#else
            /* one work-item writes every word: no atomic needed, and PoCL 3.1 (LLVM 15)
             * lost atomic_or's bits on __local words read back by plain loads */
            sh->head_bits[(p - base) >> 5] |= 1u << ((p - base) & 31u);
#endif
        }
    }
#if JS_T > 1
    JS_BARRIER();
#endif
}

/* The head bits of vector j, as marked (JS_V divides 32, so they share one word). */
#define JS_VECTOR_HEADS(base, n, full, j) \
    ((sh->head_bits[((js_u32)js_vec_index(j) * JS_V) >> 5] >> (((js_u32)js_vec_index(j) * JS_V) & 31u)) \
     & ((1u << JS_V) - 1u))
#elif JS_SEGMENTED
/* The head bits of vector j: from the uint8 flags, or from the position when row_len != 0. */
JS_DEVICE_FN js_u32 js_vector_heads(js_size base, js_size n, int full, js_u32 j JS_SEG_LOAD_PARAMS)
{
    js_size first = base + js_vec_index(j) * JS_V;
    js_u32 h[JS_V];
    if (row_len) {
        /* position within the row, divided once per vector and then advanced;
         * 32-bit division where it suffices (it is several times cheaper) */
        js_size r = (first | row_len) >> 32 ? first % row_len : (js_size)((js_u32)first % (js_u32)row_len);
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e) {
            h[e] = r == 0;
            r = r + 1 == row_len ? 0 : r + 1;
        }
    } else if (full) {
        JS_VLOAD_U8(h, heads + base, js_vec_index(j));
    } else {
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            h[e] = first + e < n ? heads[first + e] : 0u;
    }
    js_u32 bits = 0;
#pragma unroll
    for (js_u32 e = 0; e < JS_V; ++e)
        bits |= (js_u32)((first + e < n) && h[e] != 0) << e;
    return bits;
}
#define JS_VECTOR_HEADS(base, n, full, j) js_vector_heads(base, n, full, j JS_SEG_LOAD_FWD)
#else
#define JS_VECTOR_HEADS(base, n, full, j) 0u
#endif

#if JS_SEGMENTED
/* Vectors whose head bits share one 64-bit word of a thread's mask. */
#define JS_VPW (JS_P * JS_V < 64 ? JS_P : 64 / JS_V)
#endif

#if JS_SEGMENTED && JS_T == 1
/* The head bits of vectors j .. j + JS_VPW - 1 of a one-thread tile (j a multiple of
 * JS_VPW), as one word: its vector j holds items j * JS_V onwards. */
JS_DEVICE_FN js_u64 js_head_word(js_size base, js_size n, int full, js_u32 j JS_SEG_LOAD_PARAMS)
{
#if JS_SEG_OFFSETS
    /* as marked: bit p of head_bits is item p of the tile */
    (void)n;
    (void)full;
    js_u32 w = (j * JS_V) >> 5;
    js_u64 lo = sh->head_bits[w];
    return JS_P * JS_V > 32 ? lo | (js_u64)sh->head_bits[w + 1] << 32 : lo;
#else
    js_size first = base + (js_size)j * JS_V;
    js_u64 word = 0u;
    if (row_len) {
        /* one division a word: the heads are row_len apart from the first */
        js_size r = first % row_len;
        for (js_size p = r ? row_len - r : 0u; p < JS_VPW * JS_V && first + p < n; p += row_len)
            word |= (js_u64)1u << p;
        return word;
    }
#if JS_VPW * JS_V == 64
    if (full) {
        /* the 64 flag bytes as 8 words (first is a multiple of 64): in each, a byte's top
         * bit is set where the byte is nonzero, and a multiply gathers the 8 top bits in
         * order, with no carries between the partial products */
        JS_GLOBAL const js_u64* f = (JS_GLOBAL const js_u64*)(heads + first);
        for (js_u32 q = 0; q < 8u; ++q) {
            js_u64 t = f[q];
            js_u64 low7 = (js_u64)0x7F7F7F7F7F7F7F7F;
            t = ((((t & low7) + low7) | t) >> 7) & (js_u64)0x0101010101010101;
            word |= (t * (js_u64)0x0102040810204080) >> 56 << (8u * q);
        }
        return word;
    }
#endif
    for (js_u32 i = 0; i < JS_VPW; ++i)
        word |= (js_u64)JS_VECTOR_HEADS(base, n, full, j + i) << (i * JS_V);
    return word;
#endif
}
#endif

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

#if JS_LANES
/* One-thread tiles of a built-in operator on a CPU (ScanSpec.lanes): the items of a
 * vector are the lanes of a js_vec. Loops over js_val arrays compiled to scalar code
 * there, a lane at a time; these stay in vector registers.
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
/* A store around the cache, where the compiler has one (clang-based CPU runtimes), and
 * the fence that orders such stores before later ones (x86: sfence); see JS_STREAM_BIT */
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

/* Loads the tile at base and scans it (js_load_input, then js_scan_tile): the one step
 * the owner of a tile and a workgroup falling back on it take. A one-thread tile does
 * both in one pass over its vectors, with the same expressions: on a CPU the tile is an
 * array in memory, and a pass of its own is a write and a read of it. */
#if JS_T == 1
JS_DEVICE_FN T js_load_scan(js_src in, js_size base, js_size n, js_val x[JS_P][JS_V], T left[JS_P],
                            js_heads* own, JS_LOCAL_PTR js_shared* tile_sh JS_SEG_LOAD_PARAMS)
{
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
}
#else
JS_DEVICE_FN T js_load_scan(js_src in, js_size base, js_size n, js_val x[JS_P][JS_V], T left[JS_P],
                            js_heads* own, JS_LOCAL_PTR js_shared* tile_sh JS_SEG_LOAD_PARAMS)
{
    js_load_input(in, base, n, x, own JS_SEG_LOAD_FWD);
    return js_scan_tile(x, left, *own, tile_sh);
}
#endif

/* Splits loaded pairs (the segmented spine of reduce-then-scan) into values and head bits. */
JS_DEVICE_FN js_heads js_split(T p[JS_P][JS_V], js_val x[JS_P][JS_V])
{
    js_heads h = js_no_heads();
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            x[j][e] = JS_VALUE_OF(p[j][e]);
#if JS_SEGMENTED
        js_u32 bits = 0;
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            bits |= (js_u32)(p[j][e].h != 0) << e;
        JS_SET_HEADS(h, j, bits);
#endif
    }
    return h;
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

#if JS_SEG_STAGE
/* A segmented reduction's stores: the total of segment s sits at its last element,
 * offsets[s + 1] - 1. The tile stages its inclusive values in local memory, with the
 * value just before the tile (the prefix) in front, and writes the totals of segments
 * s - 1 for s in seg_first[t] .. seg_first[t + 1] (these ranges partition 0..nseg; s = 0
 * names no segment), whose last elements lie in base - 1 .. base + JS_TILE - 1. Empty
 * ones get the identity.
 * Only the first of them can have begun before the tile; without a prefix (carry
 * given) its local total goes to carry[t] for js_rts_seg_fixup to complete. */
JS_DEVICE_FN void js_store_segment_totals(js_dst out, js_size base, js_val x[JS_P][JS_V],
                                          T left[JS_P], T prefix, int has_prefix, js_heads heads,
                                          JS_GLOBAL js_val* carry JS_SEG_LOAD_PARAMS)
{
    js_u32 lid = JS_LID;
#if JS_SEQ_SEGMENTS
    (void)left;
    js_val p = JS_VALUE_OF(prefix);
    int before = has_prefix;
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        js_u32 q = 1u + (js_u32)js_vec_index(j) * JS_V;
        js_u32 b = JS_VBITS(heads, j);
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            sh->stage[q + e] = before && !JS_BIT_SEEN(b, e) ? js_vop(p, x[j][e]) : x[j][e];
        before = before && b == 0u;
    }
#else
JS_UNROLL
    for (js_u32 j = 0; j < JS_P; ++j) {
        js_val l = JS_VALUE_OF(has_prefix ? js_op(prefix, left[j]) : left[j]);
        js_u32 q = 1u + (js_u32)js_vec_index(j) * JS_V;
        js_u32 b = JS_VBITS(heads, j);
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            sh->stage[q + e] = JS_BIT_SEEN(b, e) ? x[j][e] : js_vop(l, x[j][e]);
    }
#endif
    if (lid == 0)
        sh->stage[0] = has_prefix ? JS_VALUE_OF(prefix) : JS_VIDENTITY;
    JS_BARRIER();
    js_size t = base / JS_TILE;
    js_size lo = seg_first[t], hi = seg_first[t + 1];
    for (js_size s = lo + lid; s < hi; s += JS_T) {
        if (s == 0)
            continue;
        js_size a = offsets[s - 1], b = offsets[s];
        /* b - base <= JS_TILE for offsets that pass the check: bad ones read no stage outside it */
        js_val v = a == b || b - base > (js_size)JS_TILE ? JS_VIDENTITY : sh->stage[b - base];
        if (carry && s == lo)
            carry[t] = v;
        else
            JS_DST_ITEM(out, s - 1, v);
    }
}
#endif

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

/* The carry of a scan from a value: it goes on the left of everything, and of a segmented
 * scan up to its first head (as a pair without a head, the lifted operator does that). */
JS_DEVICE_FN T js_carry(JS_GLOBAL js_u32* ctrl)
{
    js_val v = *(JS_GLOBAL const js_val*)(ctrl + JS_CTRL_CARRY);
#if JS_SEGMENTED
    return js_pair(0u, v);
#else
    return v;
#endif
}
