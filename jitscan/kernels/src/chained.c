/* jitscan single-pass chained scan: decoupled look-back (JS_FALLBACK 0) or decoupled
 * fallback (JS_FALLBACK 1). One launch, one read and one write of the data.
 *
 * The whole protocol is one loop over steps decided by thread 0 and read by every
 * thread after a barrier, so control flow around barriers stays uniform:
 *   OWN       scan this workgroup's tile and post its aggregate;
 *   LOOK      read a window of predecessors and walk it;
 *   FALLBACK  scan a stalled predecessor's tile and insert its aggregate;
 *   DONE      the prefix is known.
 * With JS_ONE_SCAN_SITE (OpenCL without shuffles: PoCL and the like) OWN and
 * FALLBACK share one call of js_load_scan: PoCL's LLVM 14 crashes on kernels with two
 * inlined copies of the workgroup scan. Elsewhere the own tile is scanned before the
 * loop, which keeps the loop small and the own tile's registers out of it.
 * Owns js_chained_storage: the kernel's shared memory, the struct of its parts'. */

/* The kernel's shared memory: its parts' storage, each owned by its header, and the
 * protocol's own words (and the parked vectors, declared in the kernel). */
typedef struct {
    js_scan_storage scan;        /* scan.h: the tile's scan across the workgroup */
    js_lookback_storage lb;      /* lookback.h: the window, the walk's position and result */
#if JS_DETERMINISTIC
    js_det_storage det;          /* deterministic.h: the anchors */
#endif
#if JS_SEG_OFFSETS
    js_seg_storage seg;          /* segments.h: the heads marked from offsets, a staged tile */
#endif
    js_u32 lb_ctrl[2];           /* the protocol's next step, by loop iteration parity */
    js_u32 tile;                 /* the tile this workgroup took */
} js_chained_storage;
JS_STATIC_ASSERT(js_chained_storage_size, sizeof(js_chained_storage) == JS_CHAINED_STORAGE_BYTES);
#if JS_PARK
/* the parked vectors beside it (in the kernel: as members, NVIDIA's compiler allocated the
 * segmented kernels' registers otherwise, and their spills changed) */
JS_STATIC_ASSERT(js_park_size, sizeof(js_val[JS_PARK][JS_V][JS_T]) + sizeof(T[JS_PARK][JS_T]) == JS_PARK_BYTES);
#endif

JS_KERNEL void js_chained(JS_SRC_PARAMS, JS_DST_PARAMS, js_size n, JS_GLOBAL js_u32* ctrl, js_u32 kind, js_u32 epoch, js_u32 spin_limit, js_u32 wait_limit, js_u32 block_every, js_u32 row_tiles, js_size carry0, js_size carry1, js_size carry2, js_size carry3 JS_SEG_PARAMS)
{
    JS_LOCAL_DECL js_chained_storage sh;
#if JS_PARK
    /* Vectors of the own tile that wait out the look-back in the workgroup's memory
     * (ScanSpec.parked_vectors): the walk's registers would otherwise push them to the
     * thread's spill memory, read back after it at the latency of a cache miss. Each
     * thread reads back only what it parked, so no barrier is needed. */
    JS_LOCAL_DECL js_val park[JS_PARK][JS_V][JS_T];
    JS_LOCAL_DECL T park_left[JS_PARK][JS_T];
#endif
    JS_GLOBAL js_sw* state = (JS_GLOBAL js_sw*)(ctrl + JS_CTRL_WORDS);
    js_u32 lid = JS_LID;
    js_src in = JS_SRC_AT;
    js_dst out = JS_DST_AT;

    /* Tiles are numbered in the order workgroups start, not by group id: a tile's
     * predecessors have then all been started, which is what look-back waits on. A
     * launch of one workgroup (a small input) has one tile and takes no number: the
     * counter's round trip would delay its loads, the whole of its work. */
    int counted = JS_GROUPS > 1u;
    if (lid == 0) {
        sh.tile = counted ? JS_ATOMIC_ADD_U32(ctrl + JS_CTRL_TILE, 1u) : 0u;
        sh.lb_ctrl[0] = JS_LB_OWN;  /* used when JS_ONE_SCAN_SITE */
    }
    JS_BARRIER();
    js_u32 tile = sh.tile;
    js_size base = (js_size)tile * JS_TILE;
    /* the last tile handed out rewinds the counter for the next launch: every
     * workgroup of this one has taken its tile by now */
    if (lid == 0 && counted && base + JS_TILE >= n)
        JS_ATOMIC_XCHG_U32(ctrl + JS_CTRL_TILE, 0u);

    /* Simulated blocking: 1 in block_every tiles never posts, as if its workgroup
     * had been descheduled for good; successors must fall back. */
    int posts = !(block_every && tile % block_every == 0);

    js_val own[JS_P][JS_V];
    T own_left[JS_P], agg = JS_IDENTITY;
    js_heads own_heads = js_no_heads(), other_heads;
    js_stats st = {0u, 0u, 0u, 0u};
    /* Rows aligned to tiles (JS_ROW_TILES, a batched scan along the last axis): the
     * first tile of a row starts afresh and no walk goes back past it, so rows need
     * no head flags at all. */
#if JS_ROW_TILES
    js_u32 row_first = tile - tile % row_tiles;
#else
    /* a constant, so plain scans pay no registers for rows */
    js_u32 row_first = 0u;
    (void)row_tiles;
#endif
    /* a scan from a carry (deterministic and row scans take none: the host says so) */
    int carry = (kind & JS_CARRY_BIT) != 0u;
    /* its bits: in carry0..3 (a value the host knows), else in the control words */
    int carry_args = (kind & JS_CARRY_ARGS_BIT) != 0u;
#define JS_CARRY_VALUE js_carry(ctrl, carry_args, carry0, carry1, carry2, carry3)
    (void)carry_args;  /* a deterministic scan takes no carry */
#if JS_LANES && !JS_SEGMENTED
    /* whole one-thread tiles store around the cache where the host asks */
    int stream = (kind & JS_STREAM_BIT) != 0u;
#endif
    kind &= ~(JS_CARRY_BIT | JS_STREAM_BIT | JS_CARRY_ARGS_BIT);
    js_walk w = {JS_IDENTITY, 0, 0u, spin_limit, (js_i64)row_first, 0u, wait_limit, epoch, tile == row_first};
    js_i64 cur = (js_i64)tile - 1;
#if JS_DETERMINISTIC
    /* only anchors post an inclusive prefix (deterministic.h), the row's first tile too */
    js_u32 own_flag = JS_READY;
    js_det d = {tile, 0xffffffffu, 0u, spin_limit, 0u, wait_limit, epoch};
    if (lid == 0)
        sh.det.target = (js_i64)tile;
#else
    js_u32 own_flag = tile == row_first ? JS_INCLUSIVE : JS_READY;
#endif
#if JS_SERIAL
#if !JS_ONE_SCAN_SITE
#error "one-pass tiles skip the own tile's scan in the protocol loop"
#endif
    /* One workgroup at a time, in tile order (ScanSpec.serial: PoCL's in-thread driver):
     * the predecessor has posted its inclusive prefix before this tile starts. The tile
     * then skips its reduction pass: it scans and stores in one pass from that prefix
     * and posts its own inclusive prefix after the stores. No workgroup falls back on a
     * tile that will still post here, so no other total of it (a float one rounded
     * otherwise) is ever posted beside it (ScanSpec.one_pass_tiles). Otherwise, and for a
     * reduction, which has no second pass to save, the protocol runs as everywhere. */
    int serial = 0;
    if (kind != JS_KIND_REDUCE) {
        T before;
        serial = tile == row_first || js_read(state, epoch, tile - 1u, &before) == JS_INCLUSIVE;
        if (serial && tile > row_first)
            w.prefix = before;
        if (serial)
            sh.lb_ctrl[0] = JS_LB_DONE;
    }
#else
    int serial = 0;  /* (a variable: clang warns of a constant operand of &&) */
#endif

    /* what this tile posts: its aggregate, or the first tile's inclusive prefix from a carry */
#define JS_OWN_POST(a) (carry && tile == row_first ? js_op(JS_CARRY_VALUE, (a)) : (a))

#if JS_PARK && JS_ONE_SCAN_SITE
#error "parked vectors need the own tile scanned before the protocol loop"
#endif
#if !JS_ONE_SCAN_SITE
    /* the own tile first, then the protocol loop starts at LOOK */
    agg = js_load_scan(in, base, n, own, own_left, &own_heads, &sh.scan JS_SEG_LOAD_ARGS);
#if JS_PARK
JS_UNROLL
    for (js_u32 j = 0; j < JS_PARK; ++j) {
        park_left[j][lid] = own_left[JS_P - JS_PARK + j];
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            park[j][e][lid] = own[JS_P - JS_PARK + j][e];
    }
#endif
    if (lid == 0) {
        if (posts)
            js_post(state, epoch, tile, own_flag, JS_OWN_POST(agg));
        sh.lb.cur = cur;
        sh.lb_ctrl[0] = tile == row_first ? JS_LB_DONE : JS_LB_LOOK;
    }
    JS_BARRIER();
#endif

    /* Iteration i reads its step from lb_ctrl[i & 1] and writes the next one to the
     * other slot, which nobody reads before the barrier that ends the iteration: no
     * thread can see the next step early. lb.cur has one slot; see each step. */
    for (js_u32 it = 0;; ++it) {
        js_u32 step = sh.lb_ctrl[it & 1u];
        js_u32 next_slot = (it + 1u) & 1u;
        if (step == JS_LB_DONE)
            break;
        if (step == JS_LB_OWN || step == JS_LB_FALLBACK) {
            js_i64 which = step == JS_LB_OWN ? (js_i64)tile : sh.lb.cur;
            js_val other[JS_P][JS_V];
            T other_left[JS_P];
            /* (pointers to private arrays: OpenCL 2+ would make them generic) */
#if JS_ONE_SCAN_SITE && JS_T == 1
            /* a one-thread tile (CPUs) is an array in memory, where a copy costs a pass
             * over it: the own tile is scanned where it stays */
            JS_PRIVATE js_val (*x)[JS_V] = step == JS_LB_OWN ? own : other;
            JS_PRIVATE T* left = step == JS_LB_OWN ? own_left : other_left;
#else
            JS_PRIVATE js_val (*x)[JS_V] = other;
            JS_PRIVATE T* left = other_left;
#endif
            T a = js_load_scan(in, (js_size)which * JS_TILE, n, x, left, &other_heads, &sh.scan JS_SEG_LOAD_ARGS);
            /* every thread has read lb.cur (`which`) before thread 0 moves it below; a
             * workgroup of one subgroup has no barrier inside js_scan_tile */
            JS_BARRIER();
#if JS_ONE_SCAN_SITE
            if (step == JS_LB_OWN) {
#if JS_T > 1
JS_UNROLL
                for (js_u32 j = 0; j < JS_P; ++j) {
                    own_left[j] = left[j];
#pragma unroll
                    for (js_u32 e = 0; e < JS_V; ++e)
                        own[j][e] = x[j][e];
                }
#endif
                agg = a;
                own_heads = other_heads;
                if (lid == 0) {
                    if (posts)
                        js_post(state, epoch, tile, own_flag, JS_OWN_POST(a));
                    sh.lb.cur = cur;
                    sh.lb_ctrl[next_slot] = tile == row_first ? JS_LB_DONE : JS_LB_LOOK;
                }
            } else
#endif
            if (lid == 0) {
#if JS_DETERMINISTIC
                sh.lb_ctrl[next_slot] = js_det_insert(state, epoch, which, a, &st);
#else
                sh.lb_ctrl[next_slot] = js_fallback_take(state, epoch, &cur, a, &w, &st);
                sh.lb.cur = cur;
#endif
            }
        } else {
#if JS_DETERMINISTIC
            /* every thread: the looks of deterministic.h take part as they need */
            js_u32 next = js_det_step(step, state, epoch, (js_i64)tile, (js_i64)row_first, &d, ctrl, &st, &sh.lb,
                                      &sh.det);
            if (lid == 0)
                sh.lb_ctrl[next_slot] = next;
#elif JS_WARP_WALK
            /* every lane of subgroup 0 takes part in the shuffles; lane 0 moves lb.cur
             * only once every lane has read it: a shuffle waits for the lanes but orders
             * no memory (CUDA's racecheck saw lane 0's store race the others' loads) */
            if (lid < JS_LB_W) {
                js_u32 next = js_window_look(state, epoch, sh.lb.cur, &cur, &w, ctrl, &st);
                JS_SUBGROUP_SYNC();
                if (lid == 0) {
                    sh.lb_ctrl[next_slot] = next;
                    sh.lb.cur = cur;
                }
            }
#elif JS_WIDE_WALK
            /* every thread reads lb.cur (as `at`) before the walk's first barrier, so thread
             * 0 may move it once the walk returns */
            js_u32 next = js_window_look_wide(state, epoch, sh.lb.cur, &cur, &w, ctrl, &st, &sh.lb);
            if (lid == 0) {
                sh.lb_ctrl[next_slot] = next;
                sh.lb.cur = cur;
            }
#else
            js_window_read(state, epoch, sh.lb.cur, &sh.lb);
            JS_BARRIER();
            if (lid == 0) {
                sh.lb_ctrl[next_slot] = js_window_walk(&sh.lb, &cur, &w, ctrl, &st);
                sh.lb.cur = cur;
            }
#endif
        }
        JS_BARRIER();
    }

    /* propagate first: successors are waiting on it, the stores are not */
    if (lid == 0) {
#if JS_DETERMINISTIC
        /* js_det_took left E(tile) in lb.prefix */
        if (posts && js_det_is_anchor((js_i64)tile, (js_i64)row_first))
            js_post(state, epoch, tile, JS_INCLUSIVE, tile > row_first ? js_op(sh.lb.prefix, agg) : agg);
#else
        if (carry && w.bottom)  /* the walk reached the first tile: the carry goes first */
            w.prefix = tile == row_first ? JS_CARRY_VALUE : js_op(JS_CARRY_VALUE, w.prefix);
        if (posts && tile > row_first && !serial)
            js_post(state, epoch, tile, JS_INCLUSIVE, js_op(w.prefix, agg));
        sh.lb.prefix = w.prefix;
#endif
    }
    JS_BARRIER();
    T prefix = sh.lb.prefix;
    int has_prefix = tile > row_first || carry;
#if JS_PARK
JS_UNROLL
    for (js_u32 j = 0; j < JS_PARK; ++j) {
        own_left[JS_P - JS_PARK + j] = park_left[j][lid];
#pragma unroll
        for (js_u32 e = 0; e < JS_V; ++e)
            own[JS_P - JS_PARK + j][e] = park[j][e][lid];
    }
#endif

    if (kind == JS_KIND_REDUCE) {
#if JS_SEG_STAGE
        js_store_segment_totals(out, base, n, own, own_left, prefix, has_prefix, own_heads, 0 JS_SEG_LOAD_ARGS);
#else
        if (lid == 0 && base + JS_TILE >= n) {
            js_val total = JS_VALUE_OF(has_prefix ? js_op(prefix, agg) : agg);
            /* a sum from the host's initial= keeps its zero's sign, as NumPy's reduce does */
            JS_DST_ITEM(out, 0, carry ? total : JS_TOTAL(total));
        }
#endif
    } else {
#if JS_LANES && !JS_SEGMENTED
        T total = js_lanes_store(in, out, base, n, prefix, has_prefix, kind == JS_KIND_EXCLUSIVE, stream);
        if (serial && posts && lid == 0)
            js_post(state, epoch, tile, JS_INCLUSIVE, total);
#else
#if JS_SEG_STORE_PASS
        /* the protocol found the tile's aggregate alone (or a one-pass tile skipped it):
         * the tile is scanned here, from its prefix */
        T total = js_lanes_seg_store(in, out, base, n, prefix, has_prefix,
                                     kind == JS_KIND_EXCLUSIVE JS_SEG_LOAD_ARGS);
        if (serial && posts && lid == 0)
            js_post(state, epoch, tile, JS_INCLUSIVE, total);
#else
#if JS_SERIAL && JS_SEGMENTED
        if (serial) {
            T total = js_lanes_seg_store(in, out, base, n, prefix, has_prefix,
                                         kind == JS_KIND_EXCLUSIVE JS_SEG_LOAD_ARGS);
            if (posts && lid == 0)
                js_post(state, epoch, tile, JS_INCLUSIVE, total);
        } else
#elif JS_SERIAL && JS_DST_OWN
        if (serial) { /* a transform's one-pass tile (tile.h) */
            T total = js_own_serial_store(out, base, n, prefix, has_prefix, kind == JS_KIND_EXCLUSIVE);
            if (posts && lid == 0)
                js_post(state, epoch, tile, JS_INCLUSIVE, total);
        } else
#endif
        js_store_output(out, base, n, own, own_left, prefix, has_prefix, kind == JS_KIND_EXCLUSIVE, own_heads);
#endif
#endif
    }

#if JS_STATS
    if (lid == 0) {
        JS_ATOMIC_ADD_U32(ctrl + JS_CTRL_SPINS, st.spins);
        JS_ATOMIC_ADD_U32(ctrl + JS_CTRL_STEPS, st.steps);
        JS_ATOMIC_ADD_U32(ctrl + JS_CTRL_FALLBACKS, st.fallbacks);
        JS_ATOMIC_ADD_U32(ctrl + JS_CTRL_INSERTIONS, st.insertions);
    }
#endif
}
