/* jitscan tile state: the chained scans' scratch, its control words and one descriptor
 * per tile. Owns no shared memory.
 *
 * The control words come first (JS_CTRL_WORDS of them, JS_CTRL_*: their layout is
 * rendered from kernels/tile_state.py, which the host reads too). They are zeroed with
 * the buffer when it is new or the epoch wraps, after a deadlock, and (the counters)
 * before a counting launch; the last tile of a launch rewinds the tile counter.
 *
 * A descriptor is a flag (NOT_READY < READY < INCLUSIVE) and a value, spread over
 * JS_NPARTS atomic words.
 * Every word carries a tag in its top bits and JS_PART_BITS bits of the value below:
 *   packed: 64-bit words, 32 value bits and a 32-bit tag (one word for a 32-bit type);
 *   split:  32-bit words, 16 value bits and a 16-bit tag (the SPAA 2025 encoding).
 * A value wider than one word (64 bits split, tuples) is cut into parts by JS_BITS_PART
 * and put together by JS_BITS_SET, whatever js_bits is: an integer, or for a tuple value
 * a struct of 32-bit words holding its fields back to back (no padding).
 * The tag is (epoch << 3 | extra << 2 | flag), extra being the head bit of a segmented
 * scan's (head, value) pair. The host passes a new epoch to every launch, so
 * descriptors left by earlier launches read as NOT_READY and need no clearing: the
 * buffer is zeroed only when it is new or the epoch would overflow the tag.
 * A reader accepts a descriptor only when all its words show the same flag. That is
 * enough with relaxed atomics and no fences: a READY value is the same bits whoever
 * posted it (see js_scan_tile), and INCLUSIVE is written by the owner alone.
 *
 * Writers use atomic max, never a store: the flag sits above the value, so a word can
 * only move forward and a late fallback insertion cannot undo an INCLUSIVE posting.
 */

#define JS_NOT_READY 0u
#define JS_READY 1u
#define JS_INCLUSIVE 2u

#define JS_PART_MASK (((js_sw)1 << JS_PART_BITS) - 1)

JS_DEVICE_FN js_sw js_state_word(js_u32 epoch, js_u32 flag, js_u32 extra, js_bits bits, js_u32 part)
{
    js_u32 tag = epoch << 3 | extra << 2 | flag;
    return ((js_sw)tag << JS_FLAG_SHIFT) | JS_BITS_PART(bits, part);
}

/* flag and extra bit (extra << 2 | flag) of a word in this launch; words of earlier
 * launches are NOT_READY */
JS_DEVICE_FN js_u32 js_flag_of(js_sw w, js_u32 epoch)
{
    js_u32 tag = (js_u32)(w >> JS_FLAG_SHIFT);
    return (tag >> 3) == epoch ? (tag & 7u) : JS_NOT_READY;
}

JS_DEVICE_FN void js_post(JS_GLOBAL js_sw* state, js_u32 epoch, js_u32 tile, js_u32 flag, T value)
{
    js_bits bits = JS_STATE_BITS(value);
    js_u32 extra = JS_STATE_EXTRA(value);
#pragma unroll
    for (js_u32 p = 0; p < JS_NPARTS; ++p)
        JS_ATOMIC_MAX_SW(state + (js_size)tile * JS_NPARTS + p, js_state_word(epoch, flag, extra, bits, p));
}

/* Returns the flag and, unless NOT_READY, the value of a descriptor. Words caught
 * in the middle of an update disagree on the flag and read as NOT_READY. */
JS_DEVICE_FN js_u32 js_read(JS_GLOBAL js_sw* state, js_u32 epoch, js_u32 tile, T* value)
{
    js_bits bits = JS_BITS_ZERO;
    js_u32 flag = 0;
#pragma unroll
    for (js_u32 p = 0; p < JS_NPARTS; ++p) {
        js_sw w = JS_LOAD_SW(state + (js_size)tile * JS_NPARTS + p);
        js_u32 f = js_flag_of(w, epoch);
        if (p == 0)
            flag = f;
        else if (f != flag)
            flag = JS_NOT_READY;
        JS_BITS_SET(bits, p, w & JS_PART_MASK);
    }
    *value = JS_STATE_MAKE(bits, flag >> 2);
    return flag & 3u;
}

/* Fallback insertion: posts `value` as READY unless the tile got further. Returns 1 when
 * this call moved the tile out of NOT_READY. When the tile was already INCLUSIVE in
 * every word, *inclusive is set and *found holds that inclusive value. */
JS_DEVICE_FN int js_insert(JS_GLOBAL js_sw* state, js_u32 epoch, js_u32 tile, T value, int* inclusive,
                           T* found)
{
    js_bits bits = JS_STATE_BITS(value), old_bits = JS_BITS_ZERO;
    js_u32 extra = JS_STATE_EXTRA(value), first = 0;
    int all_inclusive = 1;
#pragma unroll
    for (js_u32 p = 0; p < JS_NPARTS; ++p) {
        js_sw old = JS_ATOMIC_MAX_SW(state + (js_size)tile * JS_NPARTS + p,
                                     js_state_word(epoch, JS_READY, extra, bits, p));
        js_u32 f = js_flag_of(old, epoch);
        if (p == 0)
            first = f;
        if ((f & 3u) != JS_INCLUSIVE)
            all_inclusive = 0;
        JS_BITS_SET(old_bits, p, old & JS_PART_MASK);
    }
    *inclusive = all_inclusive;
    *found = JS_STATE_MAKE(old_bits, first >> 2);
    return first == JS_NOT_READY;
}

/* The carry of a scan from a value: it goes on the left of everything, and of a segmented
 * scan up to its first head (as a pair without a head, the lifted operator does that). Its
 * bits come in the launch's arguments (``in_args``: a value the host knows, with no copy
 * queued before the launch) or in the control words (a value on the device, copied there). */
JS_STATIC_ASSERT(js_carry_fits, sizeof(js_val) <= 4 * sizeof(js_u64));
JS_DEVICE_FN T js_carry(JS_GLOBAL js_u32* ctrl, int in_args, js_u64 w0, js_u64 w1, js_u64 w2, js_u64 w3)
{
    js_val v;
    if (in_args) {
        union {
            js_u64 w[4];
            js_val v;
        } u;
        u.w[0] = w0;
        u.w[1] = w1;
        u.w[2] = w2;
        u.w[3] = w3;
        v = u.v;
    } else {
        v = *(JS_GLOBAL const js_val*)(ctrl + JS_CTRL_CARRY);
    }
#if JS_SEGMENTED
    return js_pair(0u, v);
#else
    return v;
#endif
}
