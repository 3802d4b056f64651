/* jitscan deterministic look-back (JS_DETERMINISTIC): every tile's prefix is one fixed
 * expression of tile aggregates, whatever the timing: the anchors.
 * Owns js_det_storage: the anchor's prefix and the tile whose window is looked at; the
 * window itself is the look-back's (js_lookback_storage, lookback.h).
 *
 * The ordinary walk folds whatever it meets, an aggregate here and an inclusive prefix
 * there, so the rounding of a float scan depends on which tiles had posted. Here the
 * tiles of a row form groups of JS_DET_K = JS_LB_W. Only the last tile of a group,
 * its anchor, posts an INCLUSIVE prefix; the others post their aggregate alone. Tile t at
 * place j of its group (first tile f = t - j, previous anchor a = f - 1) takes
 *
 *     E(t) = I(a) op F_j(agg[f], ..., agg[t-1])        (I(a) left out in a row's first group)
 *     I(t) = E(t) op agg[t]                            (anchors only)
 *
 * F_j is one tree over the window's lanes (lane i reads tile t - 1 - i; lanes j and up
 * hold the identity, and lane j reads the anchor): the same shuffles, or the same serial fold without shuffles, on
 * every call. A tile's aggregate is the same bits whoever reduces it (js_scan_tile), so
 * E(t) depends on t and the input alone. A segment head in lane h cuts off the lanes
 * beyond it exactly (the lifted operator returns the later value untouched), so the walk
 * stops there without waiting for them.
 *
 * Fallback (JS_FALLBACK 1): a stalled aggregate is reduced by the waiting workgroup and
 * inserted, as in lookback.h. A stalled anchor a is computed by the waiting workgroup
 * the way a itself would: it looks at a's window instead (descending anchor by anchor
 * as far as needed), posts I(a), and climbs back anchor by anchor to its own tile. Two
 * posters of I(a) post the same bits, so the atomic max of tile_state.h stays sound.
 * Look-back (JS_FALLBACK 0) reduces no stalled tile: it waits for aggregates, with the
 * same watchdog as lookback.h, and, where windows are walked with shuffles, works out a
 * late anchor the same way (serial windows wait for it).
 */

#if JS_DETERMINISTIC

#define JS_DET_K JS_LB_W
/* whether the window is walked with shuffles (whole subgroups) or by thread 0, and whether
 * it is one subgroup, walked by subgroup 0 alone without barriers */
#define JS_DET_SHUFFLE (JS_HAS_SHUFFLE && JS_LB_W >= JS_SG)
#define JS_DET_WARP (JS_HAS_SHUFFLE && JS_LB_W == JS_SG)
/* whether a look reads the window's first subgroup alone first: windows of one subgroup,
 * and segmented scans, whose walks mostly end at a head in the first few lanes */
#define JS_DET_NEAR_FIRST (JS_DET_WARP || (JS_DET_SHUFFLE && JS_SEGMENTED))
#define JS_DET_NONE (2u * JS_LB_W)
#define JS_DET_CAME 3u  /* beside the JS_LB_* steps: the anchor's prefix came */
#define JS_DET_FULL 4u  /* a protocol step: look at the whole window (after its first subgroup) */
/* look-back: spins on a late anchor before working its prefix out (fallback's default limit) */
#define JS_DET_HELP 16u

/* What the workgroup shares of the anchors (E(tile) itself goes to the look-back's prefix) */
typedef struct {
    T anchor;        /* I(a) of the window's anchor */
    js_i64 target;   /* the tile whose window is looked at */
} js_det_storage;
JS_STATIC_ASSERT(js_det_storage_size, sizeof(js_det_storage) == JS_DET_STORAGE_BYTES);

/* Thread 0's state of a deterministic walk (E(tile) goes to the look-back's prefix): few registers,
 * which the segmented float64 kernel is short of. */
typedef struct {
    js_u32 target;   /* the tile whose window is looked at: the own tile, or an anchor helped */
    js_u32 blocker;  /* the predecessor the last looks waited on */
    js_u32 spins;    /* consecutive looks that waited on it */
    js_u32 limit;
    js_u64 since;    /* look-back: when the current wait began (JS_CLOCK ticks) */
    js_u32 wait_limit, epoch;
} js_det;

JS_DEVICE_FN js_u32 js_det_place(js_i64 tile, js_i64 first)
{
    return (js_u32)((tile - first) % (js_i64)JS_DET_K);
}

JS_DEVICE_FN int js_det_is_anchor(js_i64 tile, js_i64 first)
{
    return js_det_place(tile, first) == JS_DET_K - 1u;
}

/* Lane i of tile x's window (x at place j; lane i reads tile x - 1 - i): a key as in
 * js_walk_key (2i: wait here; 2i + 1: the walk ends here; JS_DET_NONE: neither), and in
 * *v what the lane holds. */
JS_DEVICE_FN js_u32 js_det_key(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 x, js_u32 j, js_u32 i, js_i64 first,
                               T* v)
{
    js_i64 at = x - 1 - (js_i64)i;
    *v = JS_IDENTITY;
    if (i > j || at < first)
        return JS_DET_NONE;
    T got;
    js_u32 f = js_read(state, epoch, (js_u32)at, &got);
    if (i == j) {  /* the anchor: only its inclusive prefix will do */
        if (f != JS_INCLUSIVE)
            return 2u * i;
        *v = got;
        return 2u * i + 1u;
    }
    if (f == JS_NOT_READY)
        return 2u * i;
    *v = got;
    return JS_PREFIX_DONE(got) ? 2u * i + 1u : JS_DET_NONE;
}

/* Thread 0: the look at the target's window waited on tile `blocker`, the window's
 * anchor or not. */
JS_DEVICE_FN js_u32 js_det_wait(js_det* d, js_i64 blocker, int anchor, JS_GLOBAL js_u32* ctrl, js_stats* st,
                                JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    d->spins = (js_u32)blocker == d->blocker ? d->spins + 1u : 1u;
    d->blocker = (js_u32)blocker;
    st->spins++;
#if JS_FALLBACK
    if (d->spins > d->limit) {
        st->fallbacks++;
        d->spins = 0;
        if (anchor) {  /* a stalled anchor: work out its prefix as it would */
            d->target = (js_u32)blocker;
            ds->target = blocker;
            return JS_LB_LOOK;
        }
        lb->cur = blocker;  /* a stalled aggregate: reduce that tile */
        return JS_LB_FALLBACK;
    }
    JS_SPIN_PAUSE();
    return JS_LB_LOOK;
#else
#if JS_DET_SHUFFLE
    (void)lb;
    /* Look-back re-reads no tile, but a late anchor's prefix is only a fold of what its
     * window posted: after as many spins as fallback allows, work it out as fallback
     * does, so the chain of anchors moves at the pace of the aggregates. (Not in serial
     * windows: PoCL 3 crashes running the kernel with this branch.) */
    if (anchor && d->spins > JS_DET_HELP) {
        d->spins = 0;
        d->target = (js_u32)blocker;
        ds->target = blocker;
        return JS_LB_LOOK;
    }
#else
    (void)anchor;
    (void)lb;
    (void)ds;
#endif
    return js_watchdog(d->spins, d->limit, &d->since, d->wait_limit, d->epoch, ctrl);
#endif
}

/* Thread 0, when every aggregate of the window has come and only the anchor's inclusive
 * prefix is missing: waits on that one descriptor. The anchors' chain then moves by one
 * trip to L2 per group instead of one look at the whole window (and two barriers) per
 * spin. Returns JS_DET_CAME with *anchor set when it came; else what js_det_wait says
 * (a fallback's new target, or the watchdog). */
JS_DEVICE_FN js_u32 js_det_anchor_wait(JS_GLOBAL js_sw* state, js_u32 epoch, js_det* d, js_i64 at, T* anchor,
                                       JS_GLOBAL js_u32* ctrl, js_stats* st,
                                       JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    js_u32 x = d->target;
    while (js_read(state, epoch, (js_u32)at, anchor) != JS_INCLUSIVE) {
        js_u32 next = js_det_wait(d, at, 1, ctrl, st, lb, ds);
        if (next != JS_LB_LOOK || d->target != x)
            return next;
    }
    return JS_DET_CAME;
}

/* Whether a window whose smallest key is `key` (target at place j) waits on an aggregate,
 * and, when it does not, how many aggregates the walk takes. */
JS_DEVICE_FN int js_det_waits(js_u32 key, js_u32 j)
{
    return key < JS_DET_NONE && key % 2u == 0u && key != 2u * j;
}

JS_DEVICE_FN js_u32 js_det_taken(js_u32 key, js_u32 j)
{
    js_u32 k = key < JS_DET_NONE ? (key + 1u) / 2u : JS_LB_W;  /* lanes up to the stop */
    return k < j ? k : j;
}

/* Thread 0: a look at the target's window whose smallest key is `key` (and that does not
 * wait on an aggregate) folded its aggregates to `tree`; `anchor` holds the anchor lane.
 * Waits on the anchor alone when that is all the window lacks, then takes the window. */
JS_DEVICE_FN js_u32 js_det_took(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 tile, js_det* d, js_u32 key, T tree,
                                T anchor, js_i64 first, JS_GLOBAL js_u32* ctrl, js_stats* st,
                                JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    js_i64 x = (js_i64)d->target;
    js_u32 j = js_det_place(x, first), taken = js_det_taken(key, j);
    if (key == 2u * j) {
        js_u32 next = js_det_anchor_wait(state, epoch, d, x - 1 - (js_i64)j, &anchor, ctrl, st, lb, ds);
        if (next != JS_DET_CAME)
            return next;
    }
    int anchored = key == 2u * j || key == 2u * j + 1u;
    /* E(x): F_j, after I(a) when the walk reached the anchor */
    T e = anchored ? (taken ? js_op(anchor, tree) : anchor) : tree;
    st->steps += taken + (js_u32)anchored;
    if (x == tile) {
        lb->prefix = e;
        return JS_LB_DONE;
    }
    /* helping stalled anchor x: its own aggregate completes I(x) */
    T agg;
    js_u32 f = js_read(state, epoch, (js_u32)x, &agg);
    if (f == JS_NOT_READY)
        return js_det_wait(d, x, 0, ctrl, st, lb, ds);  /* falls back on x's own tile */
    if (f != JS_INCLUSIVE) {                          /* else x got there meanwhile */
        /* the same expression as the anchor's own posting in chained.c */
        js_post(state, epoch, (js_u32)x, JS_INCLUSIVE, x > first ? js_op(e, agg) : agg);
        st->insertions++;
    }
    /* climb back towards the own tile, one anchor at a time */
    js_i64 own_anchor = tile - (js_i64)js_det_place(tile, first) - 1;
    js_i64 next = x == own_anchor ? tile : x + (js_i64)JS_DET_K;
    d->target = (js_u32)next;
    d->spins = 0;
    ds->target = next;
    return JS_LB_LOOK;
}

/* Thread 0, after the workgroup reduced stalled tile `which` to `agg`: insert it; the
 * next look reads it back. */
JS_DEVICE_FN js_u32 js_det_insert(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 which, T agg, js_stats* st)
{
    int inclusive;
    T found;
    st->insertions += js_insert(state, epoch, (js_u32)which, agg, &inclusive, &found);
    return JS_LB_LOOK;
}

/* F_j with shuffles: each subgroup of lanes folds its part with js_subgroup_fold; the
 * parts that hold taken lanes, ceil(taken / JS_SG) of them, are folded farthest first.
 * The number of parts is a function of `taken`, so a walk that ends in the first
 * subgroup takes its part alone on either look below. */

#if JS_DET_NEAR_FIRST

/* Subgroup 0: one look at the first JS_SG lanes of the target's window, in registers, as
 * js_window_look. The shuffles order every lane's read of the target before lane 0 moves
 * it. When the nearest lane decides alone (a wait, or a head or the anchor that ends the
 * walk with it) no tree is needed: a tree whose nearest leaf has a head is that leaf, bit
 * for bit, and an anchor taken alone is E(x) as it is. Returns JS_DET_FULL when every lane
 * has come and the walk goes on past them. */
JS_DEVICE_FN js_u32 js_det_look_near(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 tile, js_i64 first, js_det* d,
                                     JS_GLOBAL js_u32* ctrl, js_stats* st,
                                     JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    js_u32 lane = JS_LID;
    js_i64 x = ds->target;
    js_u32 j = js_det_place(x, first);
    T v;
    js_u32 key = js_det_key(state, epoch, x, j, lane, first, &v);
    js_u32 key0 = JS_SHFL_IDX_U32(key, 0u);
    if (key0 <= 1u) {
        if (lane != 0u)
            return JS_LB_LOOK;
        if (js_det_waits(key0, j))
            return js_det_wait(d, x - 1, 0, ctrl, st, lb, ds);
        return js_det_took(state, epoch, tile, d, key0, v, v, first, ctrl, st, lb, ds);
    }
    key = js_subgroup_min(key, lane);
    if (key == JS_DET_NONE && j >= JS_SG)
        return lane == 0u ? JS_DET_FULL : JS_LB_LOOK;
    if (js_det_waits(key, j))
        return lane == 0u ? js_det_wait(d, x - 1 - (js_i64)(key / 2u), 0, ctrl, st, lb, ds) : JS_LB_LOOK;
    T tree = js_subgroup_fold(lane < js_det_taken(key, j) ? v : JS_IDENTITY, lane);  /* at most JS_SG */
    T anchor = JS_SHFL_IDX(v, j < JS_SG ? j : 0u);
    if (lane != 0u)
        return JS_LB_LOOK;
    return js_det_took(state, epoch, tile, d, key, tree, anchor, first, ctrl, st, lb, ds);
}
#endif

#if JS_DET_SHUFFLE && !JS_DET_WARP
/* Every thread: one look at the whole window, JS_LB_W / JS_SG subgroups of lanes. */
JS_DEVICE_FN js_u32 js_det_look(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 tile, js_i64 first, js_det* d,
                                JS_GLOBAL js_u32* ctrl, js_stats* st,
                                JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    js_u32 lid = JS_LID, lane = JS_LANE, sg = JS_SG_ID;
    /* every thread reads the target before the first barrier; thread 0 moves it after */
    js_i64 x = ds->target;
    js_u32 j = js_det_place(x, first);
    T v = JS_IDENTITY;
    if (lid < JS_LB_W) {
        js_u32 key = js_subgroup_min(js_det_key(state, epoch, x, j, lid, first, &v), lane);
        if (lane == 0u)
            lb->key[sg] = key;
        if (lid == j)
            ds->anchor = v;
    }
    JS_BARRIER();
    js_u32 key = JS_DET_NONE;
    for (js_u32 s = 0; s < JS_LB_W / JS_SG; ++s)
        key = lb->key[s] < key ? lb->key[s] : key;
    /* the same in every thread: wait on an aggregate, or take the window */
    if (js_det_waits(key, j))
        return lid == 0u ? js_det_wait(d, x - 1 - (js_i64)(key / 2u), 0, ctrl, st, lb, ds) : JS_LB_LOOK;
    js_u32 taken = js_det_taken(key, j);
    if (lid < JS_LB_W) {
        T s = js_subgroup_fold(lid < taken ? v : JS_IDENTITY, lane);
        if (lane == 0u)
            lb->part[sg] = s;
    }
    JS_BARRIER();
    if (lid != 0u)
        return JS_LB_LOOK;
    js_u32 parts = (taken + JS_SG - 1u) / JS_SG;
    T tree = parts ? lb->part[parts - 1u] : JS_IDENTITY;
    for (js_u32 s = parts ? parts - 1u : 0u; s-- > 0u;)
        tree = js_op(tree, lb->part[s]);
    return js_det_took(state, epoch, tile, d, key, tree, ds->anchor, first, ctrl, st, lb, ds);
}
#elif !JS_DET_SHUFFLE
/* Every thread: one look at the target's window, lanes read into local memory and
 * folded serially by thread 0, farthest first. */
JS_DEVICE_FN js_u32 js_det_look(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 tile, js_i64 first, js_det* d,
                                JS_GLOBAL js_u32* ctrl, js_stats* st,
                                JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
    js_u32 lid = JS_LID;
    js_i64 x = ds->target;
    js_u32 j = js_det_place(x, first);
    if (lid < JS_LB_W) {
        T v;
        lb->flag[lid] = js_det_key(state, epoch, x, j, lid, first, &v);
        lb->val[lid] = v;
    }
    JS_BARRIER();
    if (lid != 0u)
        return JS_LB_LOOK;
    js_u32 key = JS_DET_NONE;
    for (js_u32 i = 0; i < JS_LB_W; ++i)
        key = lb->flag[i] < key ? lb->flag[i] : key;
    if (js_det_waits(key, j))
        return js_det_wait(d, x - 1 - (js_i64)(key / 2u), 0, ctrl, st, lb, ds);
    js_u32 taken = js_det_taken(key, j);
    T tree = JS_IDENTITY;
    if (taken) {
        tree = lb->val[taken - 1u];
        for (js_u32 i = taken - 1u; i-- > 0u;)
            tree = js_op(tree, lb->val[i]);
    }
    return js_det_took(state, epoch, tile, d, key, tree, lb->val[j], first, ctrl, st, lb, ds);
}
#endif

/* Every thread: a LOOK or JS_DET_FULL step of the protocol (thread 0 returns the next). */
JS_DEVICE_FN js_u32 js_det_step(js_u32 step, JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 tile, js_i64 first,
                                js_det* d, JS_GLOBAL js_u32* ctrl, js_stats* st,
                                JS_LOCAL_PTR js_lookback_storage* lb, JS_LOCAL_PTR js_det_storage* ds)
{
#if JS_DET_NEAR_FIRST
    if (step == JS_LB_LOOK)
        return JS_LID < JS_SG ? js_det_look_near(state, epoch, tile, first, d, ctrl, st, lb, ds) : JS_LB_LOOK;
#endif
#if JS_DET_WARP
    return JS_LB_LOOK;  /* not reached: a window of one subgroup needs no full look */
#else
    (void)step;
    return js_det_look(state, epoch, tile, first, d, ctrl, st, lb, ds);
#endif
}
#endif /* JS_DETERMINISTIC */
