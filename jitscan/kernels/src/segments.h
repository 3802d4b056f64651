/* jitscan segments: the segmented pair (head, value) and where a tile's heads come from.
 * Owns js_seg_storage: the heads marked from offsets and a reduction's staged tile.
 *
 * Items always hold plain values (js_val). A segmented scan carries its head flags
 * beside them as one bit per item (bit j*JS_V+e of a js_heads mask) and lifts only
 * vector and larger aggregates to (head, value) pairs T: a pair per item would double
 * the tile's registers and halve the loads a thread can keep in flight. The heads come
 * from a uint8 array, from the position when row_len != 0, or from CSR offsets
 * (JS_SEG_OFFSETS), which the workgroup first marks in shared memory.
 */

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

#if JS_SEG_OFFSETS
/* Only scans by offsets keep anything here; loaders reach it as `sh` (JS_SEG_LOAD_PARAMS). */
typedef struct {
    js_u32 head_bits[(JS_TILE + 31) / 32];  /* the tile's heads, marked from the offsets */
#if JS_SEARCH_SEGMENTS && JS_T > 1
    js_u32 below;                           /* js_group_first_segment: probes below the key */
#endif
#if JS_SEG_STAGE
    js_val stage[JS_TILE + 1];              /* a reduction's inclusive values, from position base - 1 */
#endif
} js_seg_storage;
JS_STATIC_ASSERT(js_seg_storage_size, sizeof(js_seg_storage) == JS_SEG_STORAGE_BYTES);
#endif

#if JS_SEG_OFFSETS
/* Device offsets are checked by the kernels that read them, while the scan runs: a bad
 * offset raises the queue's alarm (backends.Alarm), and the host raises the error
 * (plan/forms.py). Kernels stay inside the arrays whatever the offsets hold (searches
 * stay inside 0..nseg, positions are clamped to the tile where valid offsets always
 * lie), so bad offsets give a wrong result, never a stray access. The word keeps the
 * first offending index s as 0xFFFFFFFF - (4 * s + rule), by atomic max, so that the
 * smallest s wins; the flag is for the host, which reads the word once it sees the flag.
 * Rules: 0 offsets[0] != 0; 1 offsets[s] < offsets[s - 1]; 2 offsets[nseg] != n. Indices
 * past JS_OFFSET_INDEX_LIMIT read as it. */
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

#if JS_SEARCH_SEGMENTS && JS_T > 1
/* js_first_segment by the whole workgroup: each round every work-item tests one of JS_T
 * evenly spaced offsets of the range left, and the count of those below the key narrows
 * it JS_T-fold (four rounds for 2^32 segments at 256 work-items, against 32 dependent
 * loads of one thread). The count is the same whoever runs it, so every workgroup that
 * searches a key finds the same segment, whatever the offsets hold, within 0..nseg. */
JS_DEVICE_FN js_size js_group_first_segment(JS_GLOBAL const js_size* offsets, js_size nseg, js_size key,
                                            JS_LOCAL_PTR js_seg_storage* sh)
{
    js_u32 lid = JS_LID;
    js_size lo = 0, hi = nseg;
    while (lo < hi) {  /* lo and hi come from the shared count: uniform across the workgroup */
        js_size stride = (hi - lo + JS_T - 1) / JS_T, p = lo + (js_size)lid * stride;
        if (lid == 0)
            sh->below = 0u;
        JS_BARRIER();
        if (p < hi && offsets[p] < key)
            JS_ATOMIC_ADD_LOCAL(&sh->below, 1u);
        JS_BARRIER();
        js_size c = sh->below;
        JS_BARRIER();  /* every work-item has read the count before the next round clears it */
        if (stride == 1)
            return lo + c;  /* every offset of the range was tested */
        if (c == 0)
            return lo;
        /* sorted offsets: the segment lies past the last probe below the key, at or before
         * the next probe */
        js_size last = lo + (c - 1) * stride;
        lo = last + 1;
        hi = last + stride < hi ? last + stride : hi;
    }
    return lo;
}
#define JS_SEARCH(key) js_group_first_segment(offsets, nseg, (key), sh)
#else
#define JS_SEARCH(key) js_first_segment(offsets, nseg, (key))
#endif

/* The segments of the tile at base: lo .. hi - 1 start in it (the last tile's trailing
 * empty ones at n; hi is nseg + 1 there, so that it also stores and checks offsets[nseg]).
 * From the pre-pass's table, or searched where the program's tiles search the offsets
 * themselves (JS_SEARCH_SEGMENTS: the host passes the offsets in the table's slot). A tile
 * of several threads that searched checks its offsets: the tile after it searches its own
 * lo with the same key as this tile's hi and finds the same segment, so the tiles' ranges
 * run from 0 to nseg + 1 without a gap, whatever the offsets hold, and each offset is
 * checked by a tile whose range holds it. A one-thread tile searches up to nseg and stops
 * at the first segment past it as it marks (a launch beside it checks the offsets, so its
 * range need not meet the next tile's; PoCL's LLVM 15 crashed inlining a second search,
 * and a range to nseg + 1). */
JS_DEVICE_FN void js_tile_segments(js_size base, js_size n, js_size* lo, js_size* hi JS_SEG_LOAD_PARAMS)
{
#if JS_SEARCH_SEGMENTS
    (void)seg_first;
    *lo = JS_SEARCH(base);
#if JS_T > 1
    *hi = base + JS_TILE >= n ? nseg + 1 : JS_SEARCH(base + JS_TILE);
#else
    (void)n;
    *hi = nseg;
#endif
#else
    (void)sh;
    (void)n;
    js_size t = base / JS_TILE;
    *lo = seg_first[t];
    *hi = seg_first[t + 1];
#endif
}

/* The workgroup marks the heads of the tile in local memory from the offsets of the
 * segments starting in it (js_tile_segments), so every segment costs one coalesced read;
 * workgroups of several threads that searched check those offsets too. */
JS_DEVICE_FN void js_mark_heads(js_size base, js_size n JS_SEG_LOAD_PARAMS)
{
    js_u32 lid = JS_LID;
    js_size lo, hi;
    js_tile_segments(base, n, &lo, &hi JS_SEG_LOAD_FWD);
#if !(JS_SEARCH_SEGMENTS && JS_T > 1)
    /* the pre-pass checks the offsets, or a launch beside one-thread tiles */
    (void)alarm_word;
    (void)alarm_flag;
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
#if JS_SEARCH_SEGMENTS && JS_T > 1
    for (js_size s = lo + lid; s < hi; s += JS_T)  /* offsets[nseg] too, in the last tile */
        js_check_offset(offsets, s, nseg, n, alarm_word, alarm_flag);
#endif
    for (js_size s = lo + lid; s < hi && s < nseg; s += JS_T) {
        js_size p = offsets[s];
#if JS_SEARCH_SEGMENTS && JS_T == 1
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
#if JS_HEAD_KEYS
/* item i heads a segment where its key differs from the one before (NaN from everything) */
#define JS_HEAD_AT(k, i) ((js_u32)((i) == 0 || (k)[i] != (k)[(i) - 1]))
#else
#define JS_HEAD_AT(f, i) ((js_u32)(f)[i])
#endif
/* The head bits of vector j: from the uint8 flags (or the keys), or from the position
 * when row_len != 0. */
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
#if JS_HEAD_KEYS
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            h[e] = JS_HEAD_AT(heads, first + e);
#else
        JS_VLOAD_U8(h, heads + base, js_vec_index(j));
#endif
    } else {
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            h[e] = first + e < n ? JS_HEAD_AT(heads, first + e) : 0u;
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
#if JS_VPW * JS_V == 64 && !JS_HEAD_KEYS
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

#if JS_SEG_STAGE
/* A segmented reduction's stores: the total of segment s sits at its last element,
 * offsets[s + 1] - 1. The tile stages its inclusive values in local memory, with the
 * value just before the tile (the prefix) in front, and writes the totals of segments
 * s - 1 for s in the tile's range (js_tile_segments: for valid offsets these ranges
 * partition 0..nseg; s = 0 names no segment), whose last elements lie in base - 1 ..
 * base + JS_TILE - 1. Empty
 * ones get the identity.
 * Only the first of them can have begun before the tile; without a prefix (carry
 * given) its local total goes to carry[t] for js_rts_seg_fixup to complete. */
JS_DEVICE_FN void js_store_segment_totals(js_dst out, js_size base, js_size n, js_val x[JS_P][JS_V],
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
    js_size t = base / JS_TILE, lo, hi;
    js_tile_segments(base, n, &lo, &hi JS_SEG_LOAD_FWD);  /* (a search's barriers cover the stage) */
    JS_BARRIER();
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
