/* jitscan look-back: how a workgroup learns the combination of all tiles before its own.
 * Owns js_lookback_storage: the window of predecessors and what the walk found.
 *
 * Threads 0..JS_LB_W-1 read a window of predecessors at once and the window is walked
 * from the nearest one, combining READY values (right to left, so that a
 * non-commutative operator stays in order) until an INCLUSIVE one ends the walk.
 * A NOT_READY predecessor stops the walk and the window is read again: a spin.
 * With shuffles the walk is a few shuffles in registers: by one subgroup for a window of
 * one subgroup (js_window_look), by each subgroup over its part of a wider window
 * (js_window_look_wide). Otherwise thread 0 walks the window in local memory.
 *
 * After spin_limit spins on the same predecessor:
 *   fallback (JS_FALLBACK 1): the whole workgroup reduces that tile's input itself,
 *     tries to insert it as READY, and walks on past it. No forward-progress
 *     guarantee is needed: the wait is bounded by one tile's worth of work.
 *   look-back (JS_FALLBACK 0): the spin limit is a watchdog. Waiting longer could
 *     hang the device, so the kernel flags a deadlock for the host to report and
 *     every workgroup stops waiting.
 */

/* the protocol's steps (chained.c) */
#define JS_LB_LOOK 0u
#define JS_LB_FALLBACK 1u
#define JS_LB_DONE 2u
#define JS_LB_OWN 3u

/* look-back windows of one subgroup or more are walked in registers; JS_LB_W and JS_SG
 * are powers of two (spec.py), so a wide window is whole subgroups */
#define JS_WARP_WALK (JS_HAS_SHUFFLE && JS_LB_W == JS_SG)
#define JS_WIDE_WALK (JS_HAS_SHUFFLE && JS_LB_W > JS_SG)

/* What the workgroup shares of the look-back: the window where it is not walked in one
 * subgroup's registers, and the walk's position and result, which thread 0 keeps and the
 * others read after a barrier. */
typedef struct {
#if JS_WIDE_WALK
    js_u32 key[JS_LB_W / JS_SG];  /* each subgroup's stop in a wide window */
    T part[JS_LB_W / JS_SG];      /* and what it takes */
#elif !JS_WARP_WALK
    T val[JS_LB_W];               /* one look-back window of predecessor values */
    js_u32 flag[JS_LB_W];
#endif
    T prefix;                     /* the combination of every tile before this one */
    js_i64 cur;                   /* the nearest predecessor not taken yet, or the tile to reduce */
} js_lookback_storage;
JS_STATIC_ASSERT(js_lookback_storage_size, sizeof(js_lookback_storage) == JS_LOOKBACK_STORAGE_BYTES);

typedef struct {
    js_u32 spins, steps, fallbacks, insertions;
} js_stats;

/* Thread 0's private walk state, kept across iterations of the protocol loop. */
typedef struct {
    T prefix;       /* combination of the predecessors walked so far */
    int have;       /* prefix holds something (else the first value taken is the prefix) */
    js_u32 spins;   /* consecutive spins on the current predecessor */
    js_u32 limit;   /* spins before a fallback (or, for look-back, the watchdog) */
    js_i64 stop;    /* the first tile the walk may take (of its row, else 0) */
    js_u64 since;   /* look-back: when the current wait began (JS_CLOCK ticks) */
    js_u32 wait_limit;  /* look-back: longest wait, in 1,024 ticks; 0 = no time bound */
    js_u32 epoch;   /* look-back: this launch's, which its deadlock flag carries */
    int bottom;     /* the walk took the row's first tile without an INCLUSIVE value: a
                       scan from a carry puts the carry on its left */
} js_walk;

JS_DEVICE_FN void js_walk_take(js_walk* w, T v)
{
    w->prefix = w->have ? js_op(v, w->prefix) : v;
    w->have = 1;
}

#if !JS_FALLBACK
/* Look-back's watchdog after `spins` consecutive spins on one predecessor. It fires past
 * the spin limit or, where the device has a clock, once the wait has lasted wait_limit
 * units of 1,024 ticks: a spin's length varies tenfold with the load on the device (and
 * a spin of a CPU thread that the OS preempted lasts a time slice), a clock's does not.
 * Firing flags the deadlock with its cause and how long the wait lasted, and this
 * workgroup stops waiting; once one has, nobody waits any more (checked every 64 spins:
 * each check is a trip to L2, each clock read a few cycles). Else a pause and another
 * look. The flag carries the launch's epoch: a flag an unchecked launch left (a bench
 * reads none back) is not this launch's and stops nobody. */
JS_DEVICE_FN js_u32 js_watchdog(js_u32 spins, js_u32 limit, js_u64* since, js_u32 wait_limit, js_u32 epoch,
                                JS_GLOBAL js_u32* ctrl)
{
    js_u32 cause = spins > limit ? JS_STUCK_SPINS : 0u;
#if JS_HAVE_CLOCK
    js_u32 waited = 0u;
    if (spins == 1u)
        *since = JS_CLOCK();
    if (cause || (wait_limit && spins && spins % 64u == 0u)) {
        /* a CPU thread may move to a core whose counter is a little behind */
        js_u64 now = JS_CLOCK(), t = now > *since ? (now - *since) >> 10 : 0u;
        waited = t > 0xffffffffu ? 0xffffffffu : (js_u32)t;
        if (wait_limit && waited >= wait_limit)
            cause = JS_STUCK_TIME;
    }
#else
    (void)since;
    (void)wait_limit;
#endif
    if (cause) {
        JS_ATOMIC_MAX_U32(ctrl + JS_CTRL_DEADLOCK, epoch << 2 | cause);
#if JS_HAVE_CLOCK
        JS_ATOMIC_MAX_U32(ctrl + JS_CTRL_WAITED, waited);
#endif
        return JS_LB_DONE;
    }
    /* (called with no spins too, after a step that took predecessors: no check then) */
    if (spins && spins % 64u == 0u && JS_LOAD_U32(ctrl + JS_CTRL_DEADLOCK) >> 2 == epoch)
        return JS_LB_DONE;
    JS_SPIN_PAUSE();
    return JS_LB_LOOK;
}
#endif

/* Thread 0: the walk took k predecessors, combined into `taken` (the farthest on the
 * left); `done` when the last of them ended it (INCLUSIVE, or a segment head). Returns
 * the next protocol step and moves *cur. */
JS_DEVICE_FN js_u32 js_walk_advance(js_walk* w, js_i64* cur, js_u32 k, T taken, int done,
                                    JS_GLOBAL js_u32* ctrl, js_stats* st)
{
    if (k)
        js_walk_take(w, taken);
    st->steps += k;
    *cur -= k;
    if (done || *cur < w->stop) {
        w->bottom = !done;
        return JS_LB_DONE;
    }
    w->spins = k ? 0 : w->spins + 1;
    st->spins += k ? 0 : 1;
#if JS_FALLBACK
    if (w->spins > w->limit) {
        st->fallbacks++;
        return JS_LB_FALLBACK;
    }
    JS_SPIN_PAUSE();
    return JS_LB_LOOK;
#else
    return js_watchdog(w->spins, w->limit, &w->since, w->wait_limit, w->epoch, ctrl);
#endif
}

#if JS_WARP_WALK || JS_WIDE_WALK
/* Reads predecessor `at - i` (i: this lane's place in the window) and returns where the
 * walk ends if it gets there, as 2 * (predecessors taken) + (ended by this one): the walk
 * stops before a NOT_READY one (or the row start) and after an INCLUSIVE one or a segment
 * head, so the smallest key over the window is the first of these. */
JS_DEVICE_FN js_u32 js_walk_key(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 at, js_u32 i, js_i64 stop, T* v)
{
    js_u32 f = JS_NOT_READY;
    *v = JS_IDENTITY;
    if (at - (js_i64)i >= stop)
        f = js_read(state, epoch, (js_u32)(at - (js_i64)i), v);
    return f == JS_NOT_READY ? 2u * i
           : (f == JS_INCLUSIVE || JS_PREFIX_DONE(*v)) ? 2u * i + 1u
           : 2u * JS_LB_W;
}

/* The smallest key of the subgroup, in every lane. */
JS_DEVICE_FN js_u32 js_subgroup_min(js_u32 key, js_u32 lane)
{
#pragma unroll
    for (js_u32 d = 1; d < JS_SG; d <<= 1) {
        js_u32 other = JS_SHFL_IDX_U32(key, lane ^ d);
        key = other < key ? other : key;
    }
    return key;
}

/* Lane 0 gets s[JS_SG-1] op ... op s[0]: lanes farther back on the left, so that a
 * non-commutative operator stays in order. */
JS_DEVICE_FN T js_subgroup_fold(T s, js_u32 lane)
{
#pragma unroll
    for (js_u32 d = 1; d < JS_SG; d <<= 1) {
        T farther = JS_SHFL_IDX(s, (lane + d) & (JS_SG - 1u));
        if (lane + d < JS_SG)
            s = js_op(farther, s);
    }
    return s;
}
#endif

#if JS_WARP_WALK
/* The first subgroup reads a window and walks it in registers. A serial walk by thread 0
 * costs a dependent step per predecessor, and at mid sizes, where most tiles start
 * together, tile i walks about i predecessors before it meets an INCLUSIVE one: the
 * walk, not the L2 round trip, then sets the pace of the whole chain. Here a min over
 * lanes finds where the walk ends and an ordered tree of shuffles combines what it
 * takes: 2 log2(JS_LB_W) steps per window. Call with every lane of subgroup 0; `at` is
 * the nearest predecessor (thread 0's *cur, which only thread 0 keeps). */
JS_DEVICE_FN js_u32 js_window_look(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 at, js_i64* cur, js_walk* w,
                                   JS_GLOBAL js_u32* ctrl, js_stats* st)
{
    js_u32 lane = JS_LID;  /* subgroup 0: the lane is the local id */
    T v;
    js_u32 key = js_walk_key(state, epoch, at, lane, w->stop, &v);
    /* the nearest predecessor decides alone: a spin (not ready), or it ends the walk (most
     * segmented look-backs). Spins set how long a stalled tile holds its successors
     * before they fall back, so both skip the shuffle trees */
    js_u32 key0 = JS_SHFL_IDX_U32(key, 0u);
    if (key0 <= 1u)  /* other lanes' keys are at least 2 */
        return lane == 0 ? js_walk_advance(w, cur, key0, v, (int)key0, ctrl, st) : JS_LB_LOOK;
    key = js_subgroup_min(key, lane);
    js_u32 k = (key + 1u) / 2u;
    T s = js_subgroup_fold(lane < k ? v : JS_IDENTITY, lane);
    return lane == 0 ? js_walk_advance(w, cur, k, s, (int)(key & 1u), ctrl, st) : JS_LB_LOOK;
}
#elif JS_WIDE_WALK
/* A window of JS_LB_W / JS_SG subgroups, for long walks (mid sizes, where tiles walk
 * 40-100 predecessors): one trip to L2 moves the walk up to JS_LB_W tiles. Each subgroup
 * finds its first stop and combines its part in registers as js_window_look does; two
 * barriers join the parts. Call with every thread. */
JS_DEVICE_FN js_u32 js_window_look_wide(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 at, js_i64* cur,
                                        js_walk* w, JS_GLOBAL js_u32* ctrl, js_stats* st,
                                        JS_LOCAL_PTR js_lookback_storage* sh)
{
    js_u32 lid = JS_LID, lane = JS_LANE, sg = JS_SG_ID;
    T v = JS_IDENTITY;
    /* JS_LB_W is a multiple of JS_SG: whole subgroups take this branch */
    if (lid < JS_LB_W) {
        js_u32 key = js_subgroup_min(js_walk_key(state, epoch, at, lid, w->stop, &v), lane);
        if (lane == 0)
            sh->key[sg] = key;
    }
    JS_BARRIER();
    js_u32 key = 2u * JS_LB_W;
    for (js_u32 j = 0; j < JS_LB_W / JS_SG; ++j)
        key = sh->key[j] < key ? sh->key[j] : key;
    /* the same in every thread: a spin, or the nearest predecessor ends the walk */
    if (key <= 1u)
        return lid == 0 ? js_walk_advance(w, cur, key, v, (int)key, ctrl, st) : JS_LB_LOOK;
    js_u32 k = (key + 1u) / 2u;
    if (lid < JS_LB_W) {
        T s = js_subgroup_fold(lid < k ? v : JS_IDENTITY, lane);
        if (lane == 0)
            sh->part[sg] = s;
    }
    JS_BARRIER();
    if (lid != 0)
        return JS_LB_LOOK;
    T taken = sh->part[0];
    for (js_u32 j = 1; j * JS_SG < k; ++j)
        taken = js_op(sh->part[j], taken);
    return js_walk_advance(w, cur, k, taken, (int)(key & 1u), ctrl, st);
}
#else
/* Threads below JS_LB_W: read one predecessor of the window into local memory. */
JS_DEVICE_FN void js_window_read(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64 cur, JS_LOCAL_PTR js_lookback_storage* sh)
{
    js_u32 lid = JS_LID;
    if (lid < JS_LB_W && cur - (js_i64)lid >= 0) {
        T v;
        sh->flag[lid] = js_read(state, epoch, (js_u32)(cur - lid), &v);
        sh->val[lid] = v;
    }
}

/* Thread 0: walk the window just read, one predecessor at a time. */
JS_DEVICE_FN js_u32 js_window_walk(JS_LOCAL_PTR js_lookback_storage* sh, js_i64* cur, js_walk* w,
                                   JS_GLOBAL js_u32* ctrl, js_stats* st)
{
    js_u32 k = 0;
    T taken = JS_IDENTITY;
    int done = 0;
    while (k < JS_LB_W && *cur - (js_i64)k >= w->stop && !done) {
        js_u32 f = sh->flag[k];
        if (f == JS_NOT_READY)
            break;
        T v = sh->val[k];
        taken = k ? js_op(v, taken) : v;
        /* a segment head completes the prefix: nothing before it matters */
        done = f == JS_INCLUSIVE || JS_PREFIX_DONE(v);
        ++k;
    }
    return js_walk_advance(w, cur, k, taken, done, ctrl, st);
}
#endif

/* Thread 0, after the workgroup reduced stalled tile *cur to `agg`: insert it and take
 * it (or the INCLUSIVE value found there, which ends the walk). */
JS_DEVICE_FN js_u32 js_fallback_take(JS_GLOBAL js_sw* state, js_u32 epoch, js_i64* cur, T agg, js_walk* w,
                                     js_stats* st)
{
    int inclusive;
    T found;
    st->insertions += js_insert(state, epoch, (js_u32)*cur, agg, &inclusive, &found);
    js_walk_take(w, inclusive ? found : agg);
    w->spins = 0;
    *cur -= 1;
    w->bottom = !inclusive && *cur < w->stop;
    return (inclusive || *cur < w->stop || JS_PREFIX_DONE(w->prefix)) ? JS_LB_DONE : JS_LB_LOOK;
}
